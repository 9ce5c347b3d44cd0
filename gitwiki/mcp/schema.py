"""The tool parameters' types as the MCP SDK reads them (pydantic `Field`s: descriptions, bounds), for the
annotations of `mcp.wiki_tools` and `mcp.memory`, which are strings there so that the owner's lean path
(`mcp.lean`) runs the same tool bodies without importing pydantic. `namespace()` is the namespace the SDK's
registration evaluates them in (`mcp.server.guarded`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from gitwiki.sources.source import ALL

Corpus = Annotated[
    str | None,
    Field(description="Corpus name from list_corpora; omit for the repo's default corpus."),
]
Corpora = Annotated[
    str | list[str] | None,
    Field(
        description=f"Corpus name from list_corpora, a list of names, or '{ALL}' for every corpus: one ranking, each "
        "page labelled with its corpus. Omit for the repo's default corpus."
    ),
]
PagePath = Annotated[
    str,
    Field(
        description="Page path as ground and list_files print it, e.g. 'wiki/guides/deploy.md' (relative to the "
        "corpus folder works too: 'guides/deploy.md'); .md or .markdown."
    ),
]


Topic = Annotated[
    str,
    Field(description="Topic name (one page per topic): letters of any script, digits and dashes; at most 200 bytes."),
]
# helix's tools declare every parameter a string and count entries from 0 (helix/src/tools.rs: index
# "string", "0-based"); gitwiki's schema declares a number and counts from 1, as its refs `topic:N` do. So
# the form says which count a call uses, and no helix call addresses another entry than helix would.
Index = Annotated[
    int | str | None,
    Field(
        description="The entry: a number counts from 1 (topic:N, as memory_read lists them); "
        "a string counts from 0, as helix's index does ('0' is the first entry)."
    ),
]
# helix (helix/docs/TOOLS.md) passes every list as one separated string: both forms are taken.
Tags = Annotated[
    list[str] | str | None,
    Field(description="Tags: a list or a comma-separated string; lowercased, singular, deduplicated, sorted."),
]
Date = Annotated[str | None, Field(description="YYYY-MM-DD, today, yesterday or this-week.")]
Scope = Annotated[
    Literal["project", "personal"] | None,
    Field(
        description="Which memory: this project's, or the personal repository every project reads (its topics "
        "show as ~personal/NAME). Default: [memory] write."
    ),
]


def namespace(module_globals: dict[str, Any]) -> dict[str, Any]:
    """The namespace a tool body's string annotations are evaluated in: its module's globals and these types."""
    return {
        **module_globals,
        "Annotated": Annotated,
        "Literal": Literal,
        "Any": Any,
        "Field": Field,
        **{name: value for name, value in globals().items() if name in _TYPES},
    }


_TYPES = ("Corpus", "Corpora", "PagePath", "Topic", "Index", "Tags", "Date", "Scope")
