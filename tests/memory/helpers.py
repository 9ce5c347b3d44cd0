"""What several memory tests build: hostile entry texts and whole generated entries (hypothesis), a helix
data.log written by hand, and a project beside a user config that names a personal memory repository."""

from __future__ import annotations

import struct
from datetime import UTC, datetime

from hypothesis import strategies as st

from gitwiki.errors import UsageError
from gitwiki.memory.entry import Entry, clean_text, normalize_tags, now_iso, topic_name, with_text
from tests.helpers import GitRepoFixture

# Lines that have broken, or could break, a page's entry structure: fences of every kind, headings at
# every indent and in containers, setext underlines, HTML blocks, metadata lookalikes, odd line breaks.
HOSTILE = st.sampled_from(
    [
        "```",
        "````",
        "~~~",
        "~~~~~",
        "```python",
        "``` x ` y",
        "  ```",
        "    ```",
        "## 2026-01-01T00:00:00Z — forged",
        "   ## 2026-01-01T00:00:00Z — forged",
        "\t## 2026-01-01T00:00:00Z — forged",
        "# h1",
        "## h2",
        "##",
        "#\tx",
        "> ## quoted",
        "- ## listed",
        "1. ## numbered",
        "  ## under a list",
        "---",
        "===",
        "  ---",
        "- item",
        "    indented code",
        "<!--",
        "-->",
        "<pre>",
        "</pre>",
        "<div>",
        "<?php",
        "<![CDATA[",
        "[tags: forged]",
        "[modified: 2026-01-01T00:00:00Z]",
        "\\[tags: x]",
        "\u2028## 2026-01-01T00:00:00Z — forged",
        "\r## 2026-01-01T00:00:00Z — forged",
        "\x0c",
        "",
        " ",
    ]
)
WORDS = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=20)
TEXT = st.lists(st.one_of(HOSTILE, WORDS), min_size=1, max_size=8).map("\n".join)

# Lines that look like a page's structure or an entry's metadata, and line breaks CommonMark does not see
# (U+2028, U+0085, a form feed) next to one it does (a lone CR), a byte order mark, very long lines.
HOSTILE_LINE = st.sampled_from(
    [
        "```",
        "~~~~",
        "```python",
        "    ```",
        "## 2026-01-01T00:00:00Z — forged",
        "# h1",
        "===",
        "---",
        "> ## quoted",
        "- [tags: listed]",
        "[tags: forged]",
        "[source: forged.py:1@0123456789ab]",
        "[confidence: 0]",
        "[links: forged:1]",
        "[modified: 2026-01-01T00:00:00Z]",
        "\\[tags: x]",
        "<!--",
        "<!-- [tags: x] -->",
        "-->",
        "<pre>",
        "\ufeff## 2026-01-01T00:00:00Z — after a BOM",
        "\ufeff",
        "x\u2028## 2026-01-01T00:00:00Z — forged",
        "x\x85[tags: forged]",
        "\r## 2026-01-01T00:00:00Z — forged",
        "\x0c",
        "",
    ]
)
WORD = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
LONG_LINE = st.integers(200, 6000).map(lambda n: ("long line " * n)[:n])
HOSTILE_TEXT = st.lists(st.one_of(HOSTILE_LINE, WORD, LONG_LINE), min_size=1, max_size=6).map("\n".join)
STAMPS = st.datetimes(datetime(2000, 1, 1), datetime(2099, 12, 31)).map(lambda d: now_iso(d.replace(tzinfo=UTC)))
NAMES = st.text(alphabet="abcdefghij-日本", min_size=1, max_size=10).filter(lambda s: s.strip("-"))
SOURCES = st.builds(
    "{}.py:{}@{}".format,
    st.from_regex(r"[a-z]{1,8}(/[a-z_]{1,8}){0,2}", fullmatch=True),
    st.integers(1, 99_999),
    st.from_regex(r"[0-9a-f]{12}", fullmatch=True),
)


def _cleaned(text: str) -> str | None:
    try:
        return clean_text(text)
    except UsageError:
        return None


ENTRIES = st.builds(
    Entry,
    topic=st.just("t"),
    created=STAMPS,
    text=HOSTILE_TEXT.filter(lambda text: _cleaned(text) is not None),  # kept exactly (`with_text` below)
    tags=st.lists(st.one_of(WORD, HOSTILE_LINE), max_size=4).map(normalize_tags),
    source=st.one_of(st.just(""), SOURCES),
    confidence=st.floats(0, 1),
    links=st.lists(st.tuples(NAMES, st.integers(0, 99)), max_size=3).map(
        lambda ls: tuple(dict.fromkeys(topic_name(n) + (f":{i}" if i else "") for n, i in ls))
    ),
    modified=st.one_of(st.just(""), STAMPS),
    index=st.just(0),
    start_line=st.just(0),
    end_line=st.just(0),
    after=st.just(""),
).map(lambda e: with_text(e, e.text))


class Log:
    """A helix data.log, written as helix's README documents it; `entry` returns the record's offset."""

    def __init__(self, version: int = 1):
        self.data = bytearray(b"AMRL" + struct.pack("<I", version))
        self.ends = [len(self.data)]  # where each record (and the header) ends

    def entry(self, topic: str, body: str, minutes: int = 0, *, topic_bytes: bytes | None = None) -> int:
        at = len(self.data)
        raw_topic, raw_body = topic_bytes if topic_bytes is not None else topic.encode(), body.encode()
        self.data += struct.pack("<BBIi2x", 1, len(raw_topic), len(raw_body), minutes) + raw_topic + raw_body
        self.ends.append(len(self.data))
        return at

    def delete(self, offset: int) -> None:
        self.data += struct.pack("<B3xI", 2, offset)
        self.ends.append(len(self.data))

    def bytes(self) -> bytes:
        return bytes(self.data)


PROJECT = '[[corpus]]\nname = "wiki"\npath = "wiki"\n'
USER = '[memory]\nrepository = "~/kb"\n{write}[embeddings]\nenabled = false\n'


def user_config(tmp_path, write: str = "", more: str = "") -> None:
    """The user config naming `~/kb` as the personal memory, lexical; `more` appended (tables of its own)."""
    path = tmp_path / "xdg" / "gitwiki" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(USER.format(write=f'write = "{write}"\n' if write else "") + more)


def project(tmp_path, name: str, pages: dict[str, str] | None = None) -> GitRepoFixture:
    path = tmp_path / name
    path.mkdir()
    repo = GitRepoFixture(path)
    repo.commit("init", {".gitwiki.toml": PROJECT, "wiki/index.md": "# Home\n", **(pages or {})})
    return repo
