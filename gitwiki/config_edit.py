"""The repository's `.gitwiki.toml` written and edited as text: created by `gitwiki init`, a corpus merged in by
`gitwiki init --force`, `[search]` set by `gitwiki eval --tune`. Every other line stays as it was, and each edit
is checked by parsing the result: a layout this cannot edit is an error, never a wrong file."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, NamedTuple

from gitwiki.config import DEFAULT_MODEL, REPO_CONFIG_NAME, normalize_corpus_path, toml_value
from gitwiki.errors import UsageError
from gitwiki.fs import atomic_write


class InitReport(NamedTuple):
    file: Path
    corpus: str
    path: str
    backup: Path | None = None  # the file as it was, when `--force` merged into an existing one

    def describe(self) -> str:
        where = f"(corpus {self.corpus!r} at {self.path or '.'}/)"
        if self.backup is None:
            return f"wrote {self.file} {where}; next: gitwiki index"
        return (
            f"updated {self.file} {where}, every other setting kept; the previous file is {self.backup}; "
            "next: gitwiki index"
        )


_TABLE_HEADER = re.compile(r"^[ \t]*\[", re.MULTILINE)
_CORPUS_HEADER = re.compile(r"[ \t]*\[\[[ \t]*corpus[ \t]*\]\]")


def _key_line(key: str) -> re.Pattern[str]:
    return re.compile(rf"^([ \t]*){key}[ \t]*=.*$", re.MULTILINE)


def write_init(
    root: Path, path: str, name: str, force: bool = False, site: str = "github", include: tuple[str, ...] = ("**/*.md",)
) -> InitReport:
    """Write `.gitwiki.toml` with one corpus at the repo `root` (`gitwiki init`). An existing file only with
    `force`, and then merged: the corpus `name` gets `path` and a `site` other than github (added if missing),
    everything else is kept, and the file as it was is copied to `.gitwiki.toml.bak` first."""
    target = root / REPO_CONFIG_NAME
    path = normalize_corpus_path(path, "--path")
    if not target.exists():
        atomic_write(target, init_text(path, name, site, include))
        return InitReport(target, name, path)
    if not force:
        raise UsageError(f"{target} exists; edit it, or pass --force to set corpus {name!r} in it (a backup is kept)")
    old = target.read_text(encoding="utf-8")
    # The site too when a generator was found: `github` (none found) leaves a site set by hand as it is
    merged = merge_corpus(old, path, name, target, site if site != "github" else None)
    backup = target.with_name(REPO_CONFIG_NAME + ".bak")
    atomic_write(backup, old)
    atomic_write(target, merged)
    return InitReport(target, name, path, backup)


def merge_corpus(text: str, path: str, name: str, where: Path, site: str | None = None) -> str:
    """`text` (a `.gitwiki.toml`) with corpus `name` at `path` (and of `site`, when given): its `path` (and `site`)
    line replaced or added, or a new [[corpus]] after the last one; every other line as it was. Checked by parsing
    the result."""
    import tomllib

    def corpora(source: str) -> list[Any]:
        try:
            found = tomllib.loads(source).get("corpus", [])
        except tomllib.TOMLDecodeError as e:
            raise UsageError(f"{where} is not valid TOML ({e}); fix it, or move it away and run gitwiki init") from None
        return found if isinstance(found, list) else []

    before = corpora(text)
    starts = [m.start() for m in _TABLE_HEADER.finditer(text)] + [len(text)]
    segments = [text[: starts[0]]] + [text[a:b] for a, b in zip(starts, starts[1:], strict=False)]
    in_corpus = [i for i, s in enumerate(segments) if i and _CORPUS_HEADER.match(s)]
    named = [
        i for i, table in zip(in_corpus, before, strict=False) if isinstance(table, dict) and table.get("name") == name
    ]
    lines = {"path": f"path = {toml_value(path)}", **({"site": f"site = {toml_value(site)}"} if site else {})}
    if named:
        segment = segments[named[0]]
        for key, line in lines.items():
            found = _key_line(key).search(segment)
            if found:
                segment = segment[: found.start()] + found.group(1) + line + segment[found.end() :]
            else:
                header, _, rest = segment.partition("\n")
                segment = f"{header}\n{line}\n{rest}"
        segments[named[0]] = segment
    else:
        block = "\n".join(["[[corpus]]", f"name = {toml_value(name)}", *lines.values(), 'include = ["**/*.md"]', ""])
        at = in_corpus[-1] + 1 if in_corpus else 1
        if at > 1 and not segments[at - 1].endswith("\n\n"):
            block = ("\n" if segments[at - 1].endswith("\n") else "\n\n") + block
        segments.insert(at, block + ("\n" if at < len(segments) else ""))
    merged = "".join(segments)
    after = corpora(merged)
    wanted = [t for t in after if isinstance(t, dict) and t.get("name") == name]
    set_as_asked = wanted and wanted[0].get("path") == path and (not site or wanted[0].get("site") == site)
    if len(after) != len(before) + (not named) or not set_as_asked:
        raise UsageError(f"cannot merge corpus {name!r} into {where} safely; edit it by hand")
    return merged


_SEARCH_HEADER = re.compile(r"[ \t]*\[[ \t]*search[ \t]*\][ \t]*(#.*)?$", re.MULTILINE)
_KEY_LINE = re.compile(r"^[ \t]*[A-Za-z0-9_-]+[ \t]*=", re.MULTILINE)


def write_search(root: Path, values: dict[str, Any]) -> Path:
    """Set `values` in the `[search]` table of the repo's `.gitwiki.toml` (created if missing), every other line
    kept as it was; atomic (`gitwiki eval --tune`)."""
    target = root / REPO_CONFIG_NAME
    try:
        old = target.read_text(encoding="utf-8")
    except FileNotFoundError:
        old = ""
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"cannot read {target} ({e}); fix it and run again") from None
    atomic_write(target, merge_search(old, values, target))
    return target


def merge_search(text: str, values: dict[str, Any], where: Path) -> str:
    """`text` (a `.gitwiki.toml`) with `values` in its `[search]` table: a key's value replaced on its line (a
    comment after it kept), a missing key added after the table's last key, a missing table appended. Checked by
    parsing the result: a layout this cannot edit (dotted keys, an inline table) is an error, never a wrong file."""
    import tomllib

    try:
        before = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{where} is not valid TOML ({e}); fix it and run again") from None
    starts = [m.start() for m in _TABLE_HEADER.finditer(text)] + [len(text)]
    segments = [text[: starts[0]]] + [text[a:b] for a, b in zip(starts, starts[1:], strict=False)]
    found = next((i for i, s in enumerate(segments) if i and _SEARCH_HEADER.match(s.partition("\n")[0])), None)
    if found is None:  # a new table after a blank line
        segments[-1] += "" if not text or text.endswith("\n\n") else "\n" if text.endswith("\n") else "\n\n"
        segments.append("[search]\n")
        found = len(segments) - 1
    segment = segments[found]
    for key, value in values.items():
        line = re.compile(rf"^([ \t]*{re.escape(key)}[ \t]*=[ \t]*)(.*)$", re.MULTILINE)
        setting = f"{key} = {toml_value(value)}"
        found_line = line.search(segment)
        if found_line:
            head, rest = found_line.group(1), found_line.group(2)
            tail = rest[_value_end(rest) :]  # the spaces and comment after the old value
            segment = segment[: found_line.start()] + head + toml_value(value) + tail + segment[found_line.end() :]
            continue
        keys = list(_KEY_LINE.finditer(segment))
        at = segment.find("\n", keys[-1].start()) if keys else segment.find("\n")
        at = len(segment) if at < 0 else at + 1
        segment = segment[:at] + ("" if segment[:at].endswith("\n") else "\n") + setting + "\n" + segment[at:]
    segments[found] = segment
    merged = "".join(segments)
    search = before.get("search")
    wanted = {**before, "search": {**(search if isinstance(search, dict) else {}), **values}}
    try:
        same = tomllib.loads(merged) == wanted
    except tomllib.TOMLDecodeError:
        same = False
    if not same:
        raise UsageError(f"cannot set [search] {', '.join(values)} in {where} safely; edit it by hand")
    return merged


def _value_end(rest: str) -> int:
    """Where the TOML value that starts `rest` (a line after its `=`) ends: before the spaces and `#` comment
    after it. A `#` inside a quoted string is part of the value ("a#b"), an escaped quote does not end one."""
    quote, i = "", 0
    while i < len(rest):
        ch = rest[i]
        if quote:
            if ch == "\\" and quote == '"':
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            break
        i += 1
    return len(rest[:i].rstrip(" \t"))


def init_text(path: str, name: str = "wiki", site: str = "github", include: tuple[str, ...] = ("**/*.md",)) -> str:
    """The `.gitwiki.toml` that `gitwiki init` writes."""
    return (
        "# gitwiki configuration: https://github.com/gitwiki/gitwiki/blob/main/docs/configuration.md\n"
        "[[corpus]]\n"
        f"name = {toml_value(name)}\n"
        f"path = {toml_value(path)}\n"
        f"include = {toml_value(include)}\n"
        f"site = {toml_value(site)}\n"
        "\n[search]\n"
        'mode = "hybrid"\n'
        "top_files = 5\n"
        "chunks_per_file = 3\n"
        "\n[embeddings]\n"
        "enabled = true\n"
        # Not pinned: a pinned name would override the one GITWIKI_MODEL_PATH's directory gives.
        f'# model = "{DEFAULT_MODEL}"  # the default; GITWIKI_MODEL / GITWIKI_MODEL_PATH override it\n'
    )
