"""A page version that replaces another takes over the rows of its unchanged chunks (`Store.replace_blob`): the rows
it ends with are exactly those indexing it from scratch gives, and the version it replaced is gone."""

from hypothesis import given, settings
from hypothesis import strategies as st

from gitwiki.index.store import Store
from gitwiki.markdown.chunker import parse_page
from gitwiki.memory.entry import Entry, render_page
from tests.index.versions import blob_of, index_version

WORDS = ["alpha", "beta", "gamma", "delta", "deploy", "argo", "cache", "merge"]


def rows(store: Store, blob: str) -> tuple[object, ...]:
    """Everything the index holds of `blob`, chunk ids aside: its blob row, and each chunk's row with its full-text
    row, in page order."""
    info = store.blob_info([blob]).get(blob)
    chunks = store.conn.execute(
        "SELECT c.ord, c.breadcrumb, c.level, c.start_line, c.end_line, c.text, c.hash, f.head, f.body "
        "FROM chunks c JOIN fts f ON f.rowid = c.id WHERE c.blob = ? ORDER BY c.ord",
        (blob,),
    ).fetchall()
    return info, tuple(chunks)


def totals(store: Store) -> tuple[object, ...]:
    fts_rows = store.conn.execute("SELECT count(*) FROM fts").fetchone()[0]
    return store.counts()["blobs"], store.counts()["chunks"], fts_rows, store.term_stats(WORDS)


def searched(store: Store, blob: str) -> list[tuple[int, float]]:
    """Each word's BM25 hits as (chunk's place in the page, score): what a search ranks."""
    out = []
    for word in WORDS:
        for cid, found, score in store.lexical(word, 100):
            (ord_,) = store.conn.execute("SELECT ord FROM chunks WHERE id = ?", (cid,)).fetchone()
            out.append((word, found == blob, ord_, round(score, 9)))
    return sorted(out)


def index_chain(store: Store, versions: list[str]) -> str:
    """Index `versions` of one page in turn, each replacing the one before (as a memory store does)."""
    previous = None
    for text in versions:
        previous = index_version(store, previous, text)
    return previous or ""


def from_scratch(store: Store, text: str) -> str:
    blob = blob_of(text)
    with store.write():
        store.add_blob(blob, parse_page(text))
    return blob


def topic(entries: list[str], description: str | None = None) -> str:
    page = render_page(
        "notes", [Entry("notes", f"2026-01-{i % 28 + 1:02d}T00:00:{i % 60:02d}Z", t) for i, t in enumerate(entries)]
    )
    return f"---\ndescription: {description}\n---\n{page}" if description else page


def test_an_appended_entry_keeps_every_other_row_and_ends_as_from_scratch(tmp_path):
    old = topic(["alpha beta", "gamma delta", "deploy with argo"])
    new = topic(["alpha beta", "gamma delta", "deploy with argo", "merge the cache"])
    carried = Store.open(tmp_path / "a")
    first = from_scratch(carried, old)
    ids = [r[0] for r in carried.conn.execute("SELECT id FROM chunks WHERE blob = ? ORDER BY ord", (first,))]
    with carried.write():
        kept = carried.replace_blob(first, blob_of(new), parse_page(new))
    assert kept == len(ids)  # the H1 chunk and three entries: only the new entry is inserted
    now = [r[0] for r in carried.conn.execute("SELECT id FROM chunks WHERE blob = ? ORDER BY ord", (blob_of(new),))]
    assert now[: len(ids)] == ids and len(now) == len(ids) + 1
    assert not carried.known_blobs([first])
    fresh = Store.open(tmp_path / "b")
    from_scratch(fresh, new)
    assert rows(carried, blob_of(new)) == rows(fresh, blob_of(new))
    assert totals(carried) == totals(fresh)
    assert searched(carried, blob_of(new)) == searched(fresh, blob_of(new))


def test_a_version_a_corpus_state_holds_keeps_its_rows(tmp_path):
    old, new = topic(["alpha beta"]), topic(["alpha beta", "gamma"])
    store = Store.open(tmp_path / "a")
    first = from_scratch(store, old)
    before = rows(store, first)
    with store.write():
        store.set_state("wiki", "c0", "t0", None, {"wiki/memory/notes.md": first})
        assert store.replace_blob(first, blob_of(new), parse_page(new)) == 0
    assert rows(store, first) == before
    fresh = Store.open(tmp_path / "b")
    from_scratch(fresh, new)
    assert rows(store, blob_of(new)) == rows(fresh, blob_of(new))


def test_a_new_title_or_description_moves_no_row(tmp_path):
    old, new = topic(["alpha beta"], "old words"), topic(["alpha beta"], "new words")
    store = Store.open(tmp_path / "a")
    first = from_scratch(store, old)
    with store.write():
        assert store.replace_blob(first, blob_of(new), parse_page(new)) == 0
    fresh = Store.open(tmp_path / "b")
    from_scratch(fresh, new)
    assert rows(store, blob_of(new)) == rows(fresh, blob_of(new)) and totals(store) == totals(fresh)


edits = st.lists(
    st.tuples(
        st.sampled_from(["append", "insert", "delete", "revise", "describe"]),
        st.integers(0, 20),
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join),
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=60, deadline=None)
@given(start=st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join), max_size=6), edits=edits)
def test_any_edit_sequence_ends_with_the_rows_of_an_index_from_scratch(tmp_path_factory, start, edits):
    entries, description = list(start), None
    versions = [topic(entries)]
    for action, at, words in edits:
        where = at % (len(entries) + 1)
        if action == "append":
            entries.append(words)
        elif action == "insert":
            entries.insert(where, words)
        elif action == "delete" and entries:
            entries.pop(where % len(entries))
        elif action == "revise" and entries:
            entries[where % len(entries)] = words
        elif action == "describe":
            description = words
        versions.append(topic(entries, description))
    carried = Store.open(tmp_path_factory.mktemp("carried"))
    last = index_chain(carried, versions)
    fresh = Store.open(tmp_path_factory.mktemp("fresh"))
    from_scratch(fresh, versions[-1])
    assert rows(carried, last) == rows(fresh, last)
    assert totals(carried) == totals(fresh)  # nothing of an earlier version is left
    assert searched(carried, last) == searched(fresh, last)
