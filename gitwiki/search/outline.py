"""The human-readable digest of a search: ripgrep-style `path:start-end  Title > Section`, then a snippet."""

from __future__ import annotations

import bisect
import re
import textwrap

from gitwiki.pagetext import printable
from gitwiki.search.ranking import PageTrace
from gitwiki.search.relevance import WEAK_COVERAGE, WEAK_KNOWN, WEAK_Z
from gitwiki.search.searcher import SearchResult


def outline(
    result: SearchResult, color: bool = False, mode_note: str | None = None, truncated: tuple[str, ...] = ()
) -> str:
    """`mode_note`: why the mode is not the one asked for (e.g. the model does not load), after the mode;
    `truncated`: the corpus's pages indexed in part (over [search] max_page_bytes)."""
    query = printable(result.query)
    if not result.docs:
        mode = f"{result.mode}; {mode_note}" if mode_note else result.mode
        return f"no results for {query!r} in corpus {result.corpus!r} ({mode})\n"
    mode = f"{result.mode} ({mode_note})" if mode_note else result.mode
    bold, dim, cyan, reset = ("\033[1m", "\033[2m", "\033[36m", "\033[0m") if color else ("", "", "", "")
    lines = []
    if result.weak:
        lines += [
            f"weak match: no page below holds most of the words of {query!r} or stands out in meaning; "
            "the wiki may not cover it (rephrase, or read these as guesses)",
            "",
        ]
    summaries, shown = dict(result.folders), set()
    # Page text (paths, titles, sections, snippets, folder summaries) is printed as text, never as the terminal
    # escapes a checkout's page may carry (`pagetext.printable`).
    for doc in result.docs:
        path, title = printable(doc.path), printable(doc.title)
        folder = doc.path.rpartition("/")[0]
        # A search over several corpora labels each page (and keys its folders) with its corpus.
        label = f"[{doc.corpus}] " if doc.corpus is not None else ""
        key = f"{doc.corpus}:{folder}" if doc.corpus is not None else folder
        if key in summaries and key not in shown:  # once per folder, above its first page
            shown.add(key)
            lines.append(f"{dim}{label}{printable(folder or '.')}/  {printable(summaries[key])}{reset}")
        mark = ", weak" if doc.weak else ""
        lines.append(f"{label}{bold}{path}{reset}  {title}  {dim}({score_text(doc.score)}{mark}){reset}")
        for chunk in doc.chunks:
            crumb = printable(" > ".join(chunk.breadcrumb)) or title
            lines.append(f"  {cyan}{path}:{chunk.start_line}-{chunk.end_line}{reset}  {crumb}")
            # Full chunks keep their own lines (code!); one-line snippets are wrapped.
            text = printable(chunk.text)
            body = text.splitlines() if "\n" in text else wrap(text, 100)
            lines.extend("    " + line for line in body or [""])
        if doc.explain is not None:
            lines.extend(f"  {dim}{line}{reset}" for line in explain_lines(doc.explain))
        lines.append("")
    footer = f"{len(result.docs)} pages · mode {mode} · " + (
        "corpora " + ", ".join(f"{name} at {commit[:12] or '(none)'}" for name, commit in result.corpora)
        if result.corpora
        else f"commit {result.commit[:12] or '(none)'}"
    )
    if result.dirty:
        footer += f" · {len(result.dirty)} uncommitted page(s) included"
    if result.lexical_only:
        footer += f" · {len(result.lexical_only)} searched lexically only (embedding budget): "
        footer += printable(", ".join(result.lexical_only[:3])) + (" …" if len(result.lexical_only) > 3 else "")
    if truncated:
        footer += f" · {len(truncated)} page(s) searched only up to [search] max_page_bytes: "
        footer += printable(", ".join(truncated[:3])) + (" …" if len(truncated) > 3 else "")
    lines.append(f"{dim}{footer}{reset}")
    return "\n".join(lines) + "\n"


# a hyphen after a letter of its word: where textwrap may cut one (a leading run of hyphens, `--all`, cuts nothing)
_INNER_HYPHEN = re.compile(r"[^\s-]-")
# word → the lengths of the pieces textwrap's regex cuts it into (the regex was most of a snippet's wrap); the words
# of command-line pages (`--dry-run`, `{{path/to/file}}`) come back in snippet after snippet
_PIECES: dict[str, tuple[int, ...]] = {}
_MAX_PIECES = 4096


def wrap(text: str, width: int) -> list[str]:
    """`textwrap.wrap(text, width)`, the same lines, for text of words split by single spaces (a snippet) at a
    twentieth of the cost: textwrap was most of rendering a warm `ground` (43 µs a snippet, 15 snippets). A word is
    cut where textwrap cuts it (its own regex: after a hyphen between letters, before an em-dash); a text with
    other whitespace or a piece longer than a line is textwrap's."""
    if not text or text != " ".join(text.split()) or max(map(len, text.split(" "))) > width:
        return textwrap.wrap(text, width)
    cuts: list[int] = []  # where a line may end inside a word, as textwrap's chunks allow
    if _INNER_HYPHEN.search(text):
        at = 0
        for word in text.split(" "):
            if "-" in word.lstrip("-"):
                cut = at
                for length in _pieces(word):
                    cut += length
                    cuts.append(cut)
                cuts.pop()  # the word's end: a space follows, or the text ends
            at += len(word) + 1
    # textwrap's greedy fill: each line ends at the last space or cut that leaves it `width` long at most; the space
    # that ends a line is dropped
    lines = []
    start = 0
    while len(text) - start > width:
        space = text.rfind(" ", start, start + width + 1)
        before = bisect.bisect_right(cuts, start + width)
        cut = cuts[before - 1] if before else -1
        if cut > space:
            lines.append(text[start:cut])
            start = cut
        else:
            lines.append(text[start:space])
            start = space + 1
    lines.append(text[start:])
    return lines


def _pieces(word: str) -> tuple[int, ...]:
    pieces = _PIECES.get(word)
    if pieces is None:
        if len(_PIECES) >= _MAX_PIECES:
            _PIECES.clear()
        pieces = _PIECES[word] = tuple(len(p) for p in textwrap.TextWrapper.wordsep_re.split(word) if p)
    return pieces


def score_text(score: float) -> str:
    """Four decimals, or three significant digits for a positive score they would show as 0.0000: BM25 gives a
    word found on every page of a small corpus almost no weight (SQLite's FTS5 floors its IDF at 1e-6), so the
    one hit of a one-page corpus scored `(0.0000)`, as if it had not matched."""
    return f"{score:.3g}" if 0 < abs(score) < 0.00005 else f"{score:.4f}"


def explain_lines(trace: PageTrace) -> list[str]:
    """`ground --explain`'s lines under a page: each ranker's view of it, how its score was made, the weak flag."""
    how = {"raw": "its own scores", "rrf": "rrf 1/(60+rank)", "dbsf": "dbsf"}[trace.normalization]
    seen = [
        f"{r.ranker} #{r.rank} (chunk #{r.chunk_rank}, raw {score_text(r.raw)} → {score_text(r.normalized)})"
        for r in trace.rankers
    ]
    lines = [f"why: {' · '.join(seen) or 'no ranker returned it'} · normalized by {how}"]
    score = f"chunk {score_text(trace.chunk_score)}" + (" (reranked)" if trace.reranked else "")
    if trace.page_fusion is not None:
        score += f", page fusion {score_text(trace.page_fusion)} × {trace.page_share}"
        score += f" → base {score_text(trace.base)}"
    if trace.second_chunk is not None and trace.second_share:
        score += f" + second chunk {score_text(trace.second_chunk)} × {trace.second_share:.3f} ({trace.chunks} ranked)"
    lines.append(f"     {score} = {score_text(trace.score)}")
    if trace.weak is not None:
        w = trace.weak
        said = f"weak: {'yes' if w.weak else 'no'} · coverage {w.coverage:.2f} (not weak from {WEAK_COVERAGE})"
        if w.cosine is not None:
            said += f" · cosine {w.cosine:.4f}"
        if w.background is not None and w.z is not None:
            said += f", z {w.z:.2f} (not weak from {WEAK_Z}) over mean {w.background.mean:.4f} ± {w.background.std:.4f}"
            if w.known is not None:
                said += f" · query terms in the index {w.known:.2f} (the z counts from {WEAK_KNOWN})"
        lines.append(f"     {said}")
    return lines
