"""YAML front matter between `---` lines at the top of a page: metadata, not text."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any, NamedTuple

# A front matter holds a few keys. YAML aliases let 452 bytes stand for billions of values (that page cost
# 87 s and 4.1 GB to index and left a 356 MB index), so a mapping counting more values than this, every use
# of an alias counted, is refused as invalid.
MAX_VALUES = 10_000

# Reads the YAML between the --- lines: (mapping, None) or ({}, why it is not one). `read_yaml` by default;
# the hooks pass a cached one (gitwiki.pages.pagefacts), since importing PyYAML costs more than a lint run's parsing.
YamlReader = Callable[[str], tuple[dict[str, Any], str | None]]


class FrontMatter(NamedTuple):
    meta: dict[str, Any]  # empty when there is none or it is invalid
    body: str  # the text after the closing `---`
    body_line: int  # 1-based line number in the file where `body` starts
    error: str | None  # why the YAML is invalid, with its line; None when fine or absent


def split_front_matter(text: str, read: YamlReader | None = None) -> FrontMatter:
    lines = text.split("\n")
    if not lines or lines[0].lstrip("\ufeff").rstrip() != "---":  # a byte order mark may come first
        return FrontMatter({}, text, 1, None)
    for i in range(1, len(lines)):
        if lines[i].rstrip() in ("---", "..."):
            break
    else:
        return FrontMatter({}, text, 1, None)  # an opening rule with no closing one is just a rule
    meta, error = (read or read_yaml)("\n".join(lines[1:i]))
    return FrontMatter(meta, "\n".join(lines[i + 1 :]), i + 2, error)


def read_yaml(raw: str) -> tuple[dict[str, Any], str | None]:
    """The mapping in the front matter `raw` (which starts on file line 2), or {} and why it is not one."""
    if not raw.strip():
        return {}, None
    import yaml  # only pages with front matter pay for it

    try:
        meta = _plain_copy(_load(yaml, raw), [MAX_VALUES])
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 2}: " if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        return {}, f"{where}{problem}"
    except _TooBig:
        return {}, f"line 2: front matter expands to more than {MAX_VALUES:,} values (nested aliases); write it out"
    except RecursionError:
        return {}, "line 2: front matter is nested too deeply"
    except (ValueError, TypeError, OverflowError) as e:  # a value YAML recognises but cannot build: 2024-13-45
        return {}, f"line 2: {e}"
    if not isinstance(meta, dict):
        return {}, "line 2: front matter must be a mapping of keys to values"
    return meta, None


def _load(yaml: ModuleType, raw: str) -> Any:
    """libyaml's loader is ~10x faster (index-blocks reads every page's front matter on each commit); the
    pure-Python one reports errors at the offending line, so it re-reads pages that fail."""
    try:
        return yaml.load(raw, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        return yaml.safe_load(raw)


class _TooBig(Exception):
    pass


def _plain_copy(value: Any, budget: list[int]) -> Any:
    """`value` rebuilt with its strings made encodable (the pure-Python loader turns "\\uD800" into a lone
    surrogate, which SQLite and JSON output refuse), counting every value against `budget`."""
    budget[0] -= 1
    if budget[0] < 0:
        raise _TooBig
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, dict):
        return {_plain_copy(k, budget): _plain_copy(v, budget) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_plain_copy(v, budget) for v in value]
    return value


def meta_str(meta: dict[str, Any], key: str) -> str | None:
    value = meta.get(key)
    return value.strip() if isinstance(value, str) and value.strip() else None


def meta_tags(meta: dict[str, Any]) -> tuple[str, ...]:
    tags = meta.get("tags")
    if isinstance(tags, str):
        tags = [t.strip() for t in tags.replace(",", " ").split()]
    if not isinstance(tags, list):
        return ()
    return tuple(str(t) for t in tags if str(t).strip())
