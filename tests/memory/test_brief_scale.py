"""memory_brief of a large topic (docs/research/memory-store-scale.md): supersession asks only the pairs of
entries that can be alike (prefix filtering) instead of every pair, with the answer of every pair."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gitwiki.memory import brief
from gitwiki.memory.entry import Entry, jaccard, parse_iso, terms

VOCAB = "redis cache expiry deploy canary rollout build wheel python version flaky retry lock index".split()


def every_pair(entries: list[Entry]) -> dict[str, str]:
    """Supersession as brief.classify decided it by comparing every pair of a topic's entries."""
    newer: dict[str, str] = {}
    by_text: dict[str, list[Entry]] = {}  # an entry whose text another one has is shown once, the oldest
    for e in entries:
        by_text.setdefault(" ".join(e.text.lower().split()), []).append(e)
    by_topic: dict[str, list[Entry]] = {}
    for same in by_text.values():
        e = min(same, key=lambda e: e.created)
        by_topic.setdefault(e.topic, []).append(e)
    for group in by_topic.values():
        group.sort(key=lambda e: e.when)
        for i, old in enumerate(group):
            old_time = parse_iso(old.when)
            for new in reversed(group[i + 1 :]):
                new_time = parse_iso(new.when)
                clearly_newer = (
                    old_time and new_time and (new_time.date() - old_time.date()).days >= brief.SUPERSEDE_DAYS
                )
                if clearly_newer and jaccard(terms(old.text), terms(new.text)) > brief.SUPERSEDE_OVERLAP:
                    newer[old.ref] = new.ref
                    break
    return newer


ENTRY = st.tuples(
    st.sampled_from(["a", "b"]),
    st.integers(1, 28),
    st.integers(0, 23),
    st.lists(st.sampled_from(VOCAB), min_size=0, max_size=8),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(ENTRY, max_size=30, unique_by=lambda t: (t[1], t[2])))
def test_supersession_is_what_comparing_every_pair_gives(rows):
    entries = [
        Entry(topic, f"2026-03-{day:02d}T{hour:02d}:00:00Z", " ".join(words) or "x", index=n + 1)
        for n, (topic, day, hour, words) in enumerate(rows)
    ]
    items = brief.classify(list(entries))
    assert {i.entry.ref: i.superseded_by for i in items if i.superseded_by} == every_pair(list(entries))


def word(n: int, first: str) -> str:
    """A word of letters alone, one per number (a digit would be a term of its own)."""
    out = first
    while True:
        out += "bcdfghjlmnprstvw"[n % 16]
        n //= 16
        if not n:
            return out + "a"


def test_a_large_topic_compares_only_pairs_that_can_be_alike(monkeypatch):
    """800 entries on 800 different subjects: the pairs compared were 319,600 (0.44 s of a brief)."""
    entries = [
        Entry(
            "git", f"2026-0{1 + n % 9}-{1 + n % 28:02d}T00:00:00Z", f"{word(n, 'k')} {word(n, 'q')} {word(n, 'z')} note"
        )
        for n in range(800)
    ]
    compared: list[object] = []
    monkeypatch.setattr(brief, "jaccard", lambda a, b: compared.append(1) or jaccard(a, b))
    brief.classify(entries)
    assert len(compared) < 2_000


def test_a_topic_briefed_again_is_not_compared_again_and_any_change_is(monkeypatch):
    """A server briefs the same topics again and again: supersession and chains are remembered by the entries
    themselves, so a brief of unchanged topics compares nothing, and a changed entry is compared afresh."""
    entries = [
        Entry(
            "t",
            f"2026-0{1 + n % 9}-{1 + n % 28:02d}T00:00:00Z",
            f"redis cache expiry {VOCAB[n % len(VOCAB)]}",
            index=n + 1,
        )
        for n in range(40)
    ]
    first = brief.classify(list(entries)), brief._chains(list(entries))
    compared = []
    real = brief._similar_later
    monkeypatch.setattr(brief, "_similar_later", lambda sets: compared.append(sets) or real(sets))
    monkeypatch.setattr(brief, "_topic_chains", lambda group: compared.append(group) or [])
    assert (brief.classify(list(entries)), brief._chains(list(entries))) == first and compared == []
    changed = [*entries[:-1], entries[-1]._replace(text="redis cache expiry rollout lock")]
    monkeypatch.undo()
    items = brief.classify(list(changed))
    assert {i.entry.ref: i.superseded_by for i in items if i.superseded_by} == every_pair(list(changed))
    live = [i.entry for i in items if not i.superseded_by]
    assert brief._chains(live) == sorted(brief._topic_chains(live), key=lambda c: (-len(c.refs), c.keyword))
