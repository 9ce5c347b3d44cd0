"""The lint plug-in point: a `Rule` protocol, the records rules produce, and the registry of rules by code."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, NamedTuple, Protocol

if TYPE_CHECKING:
    from gitwiki.config import Config, CorpusConfig
    from gitwiki.markdown.document import Document

SEVERITIES = ("error", "warning")


class Finding(NamedTuple):
    path: str  # repo-relative
    line: int  # 1-based
    col: int  # 1-based
    code: str  # GW001 …
    severity: str  # "error" | "warning"
    message: str
    hint: str


class Problem(NamedTuple):
    """What a rule reports; the runner adds the path, code, severity and (unless given) the rule's hint."""

    line: int
    col: int
    message: str
    hint: str | None = None


class Context(NamedTuple):
    pages: set[str]  # repo-relative pages that links resolve against (the staged tree)
    config: Config
    corpus: CorpusConfig | None  # the corpus the linted page belongs to
    anchors: (
        Callable[[str], Iterable[str] | None] | None
    )  # another page's anchors (None: unreadable); None: not checked
    linked: set[str] | None  # pages that some other page links to; None: orphans are not checked
    titled: frozenset[str] = frozenset()  # pages a docs site's navigation gives a title (mkdocs `nav`)
    moved: Mapping[str, str] | None = None  # Docusaurus: site path → the page a front-matter slug or id puts there
    size: int | None = None  # the page's bytes, when only its head is linted (`lint_page`)

    def page_bytes(self, doc: Document) -> int:
        return self.size if self.size is not None else len(doc.text.encode("utf-8"))


class Rule(Protocol):
    code: str
    name: str
    severity: str
    summary: str  # one line for `gitwiki lint --list-rules` and the docs
    hint: str  # the default fix hint

    def check(self, doc: Document, ctx: Context) -> Iterable[Problem]: ...


RULES: dict[str, Rule] = {}


def register(cls: type) -> type:
    """Class decorator: add one instance of the rule to RULES under its code."""
    rule = cls()
    if rule.code in RULES:
        raise AssertionError(f"lint rule code {rule.code} registered twice")  # a bug in gitwiki
    if rule.severity not in SEVERITIES:
        raise AssertionError(f"lint rule {rule.code} has unknown severity {rule.severity!r}")
    RULES[rule.code] = rule
    return cls
