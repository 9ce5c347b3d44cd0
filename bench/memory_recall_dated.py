"""Memory recall when the entries carry their notes' own dates, not the one moment the held-out builds give them all.

A memory that agents write to for months holds entries of many ages. The held-out sets (bench/heldout/til,
bench/heldout/simonw) are built at one moment, so an entry's age cannot move a rank there. This bench gives each
entry the date its note was added in the source repository (the mirror's `git log --diff-filter=A`), as they are
(`--span 0`, 11 and 6 years) or squeezed into the last SPAN days (a year, three months), and ranks the questions
with `memory search` as it is and with the entry's recency as a score factor (`× recency`, relevance × confidence ×
1 / (1 + age_days / 30): what memory search did before). The rankings come from gitwiki's own rankers once per
question (bench/memory_recall_levers.py's lab); only the entries' ages differ between the rows.

    python bench/memory_recall_dated.py [--set til|simonw] [--span DAYS ...] [--json]

Figures: docs/research/memory-dates.md.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

from benchlib import use_offline_model
from memory_recall_eval import KINDS, metrics, paired

MIRRORS = {"til": "/work/.mirror/jbranchaud+til/repo", "simonw": "/work/.mirror/simonw+til/repo"}


def added_dates(mirror: str) -> dict[str, datetime]:
    """Each file's first commit in the mirror's history (its note's date), by path."""
    log = subprocess.run(
        ["git", f"--git-dir={mirror}", "log", "--diff-filter=A", "--name-only", "--format=@%at"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    first: dict[str, int] = {}
    stamp = 0
    for line in log.splitlines():
        if line.startswith("@"):
            stamp = int(line[1:])
        elif line.strip():
            first[line.strip()] = min(first.get(line.strip(), stamp), stamp)
    return {path: datetime.fromtimestamp(at, UTC) for path, at in first.items()}


def squeezed(dates: dict[Any, datetime], span: float) -> dict[Any, datetime]:
    """The dates mapped into the `span` days before the newest one, in the same order (0: as they are)."""
    if not span:
        return dates
    lo, hi = min(dates.values()), max(dates.values())
    return {k: hi - (hi - d) * (span / max((hi - lo).days, 1)) for k, d in dates.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=tuple(MIRRORS), default="til")
    parser.add_argument("--span", type=float, nargs="+", default=[0, 365, 90])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    use_offline_model()
    import memory_recall_levers as lab_mod

    from gitwiki.memory import search as ms

    lab = lab_mod.open_lab(args.set)
    lab_mod.prepare(lab)
    notes = added_dates(MIRRORS[args.set])
    own: dict[tuple[str, int], datetime] = {}
    for entry in lab.mem.entries():
        note = lab.note_of.get((entry.topic, entry.index))
        if note in notes:
            own[(entry.topic, entry.start_line)] = notes[note]
    age_days, hit = ms.age_days, ms._hit

    def ranks(dates: dict[tuple[str, int], datetime] | None, factor: bool) -> list[int | None]:
        """memory search's ranks, the entries aged by `dates` (None: the build's one moment); `factor`: × recency."""
        now = max(dates.values()) + timedelta(days=1) if dates else None

        def aged(entry: Any, at: datetime) -> float:
            when = dates.get((entry.topic, entry.start_line)) if dates else None
            return (now - when).total_seconds() / 86400 if now and when else age_days(entry, at)

        def scored(mem: Any, entry: Any, relevance: float, at: datetime, by_age: bool) -> Any:
            found = hit(mem, entry, relevance, at, by_age)
            return found._replace(score=found.score * ms.ranking.recency(aged(entry, at))) if factor else found

        ms.age_days, ms._hit = aged, scored  # type: ignore[assignment]
        try:
            return lab_mod.ranks_with(lab, lab_mod.lever_main)
        finally:
            ms.age_days, ms._hit = age_days, hit  # type: ignore[assignment]

    base = ranks(None, False)
    out: dict[str, Any] = {"set": args.set, "dated entries": len(own), "rows": {}}
    rows = [("one moment (the build)", None, False)]
    for span in args.span:
        dates = squeezed(own, span)
        ages = sorted((max(dates.values()) - d).days for d in dates.values())
        named = "own dates" if not span else f"in {span:g} days"
        label = f"{named} (ages {ages[0]}-{ages[-1]}, median {ages[len(ages) // 2]})"
        rows += [(f"{label}, as it is", dates, False), (f"{label}, × recency", dates, True)]
    for label, dates, factor in rows:
        got = base if dates is None else ranks(dates, factor)
        row: dict[str, Any] = {"all": metrics(got), "vs one moment": paired(got, base)}
        for kind in KINDS:
            row[kind] = metrics([r for r, q in zip(got, lab.questions, strict=True) if q["kind"] == kind])
        out["rows"][label] = row
        if not args.json:
            m, vs = row["all"], row["vs one moment"]
            print(
                f"{label:58} {m['hit@1']:.3f} {m['hit@5']:.3f} {m['mrr@10']:.3f}  "
                + " ".join(f"{k[:4]} {row[k]['mrr@10']:.3f}" for k in KINDS)
                + f"  dMRR {vs['mrr@10']:+.3f} {vs['mrr@10 95%']}",
                flush=True,
            )
    if args.json:
        print(json.dumps(out))


if __name__ == "__main__":
    sys.exit(main())
