"""A JSON document edited as text: every value parsed with its span, members and items inserted and removed
in place, every other byte left as it was.

`json.loads` then `json.dumps` rewrites what it does not keep: a number out of double range (`1e400`) came
back as `Infinity`, which is not JSON, and the file's own layout was lost. Here a number stays its source
text, and an edit splices only the text it adds or removes: the separator and the value, in the style
(line breaks, indentation, spacing) of the container's existing children. Removing an item that was
appended gives back the original bytes.

Strict JSON only: `NaN`, `Infinity`, lone surrogates (`"\\ud800"`), trailing commas and comments are refused,
since a file Claude Code cannot read must not be rewritten as if it could.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

MAX_DEPTH = 200  # nesting beyond this is refused rather than recursed into
WHITESPACE = " \t\n\r"
NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
LITERALS = {"true": True, "false": False, "null": None}
SURROGATE = re.compile("[\ud800-\udfff]")
STRINGS = json.JSONDecoder()  # its raw_decode reads one string at an offset, escapes and all


class JsonTextError(ValueError):
    """Not strict JSON: the message says where."""


@dataclass(frozen=True)
class Number:
    """A JSON number as its source text, so `1e400` or `0.10` are compared and kept as written."""

    text: str


@dataclass
class Node:
    start: int
    end: int
    value: object  # dict, list, str, Number, bool or None
    children: list[Node] = field(default_factory=list)  # an array's items, an object's member values
    keys: list[str] = field(default_factory=list)  # an object's keys, in order
    key_starts: list[int] = field(default_factory=list)  # where each member (its key) starts

    def child_start(self, i: int) -> int:
        return self.key_starts[i] if self.keys else self.children[i].start

    def member(self, key: str) -> Node | None:
        """The value of `key` (the last one when repeated, as JSON.parse reads it)."""
        for i in range(len(self.keys) - 1, -1, -1):
            if self.keys[i] == key:
                return self.children[i]
        return None


def parse(text: str) -> Node:
    parser = _Parser(text)
    node = parser.value(parser.skip(0), 0)
    end = parser.skip(node.end)
    if end != len(text):
        raise parser.error(end, "extra data after the document")
    return node


class _Parser:
    def __init__(self, text: str):
        self.text = text

    def error(self, pos: int, what: str) -> JsonTextError:
        line = self.text.count("\n", 0, pos) + 1
        column = pos - (self.text.rfind("\n", 0, pos) + 1) + 1
        return JsonTextError(f"line {line} column {column}: {what}")

    def skip(self, pos: int) -> int:
        while pos < len(self.text) and self.text[pos] in WHITESPACE:
            pos += 1
        return pos

    def value(self, pos: int, depth: int) -> Node:
        if depth > MAX_DEPTH:
            raise self.error(pos, f"nested deeper than {MAX_DEPTH} levels")
        c = self.text[pos : pos + 1]
        if c == "{":
            return self.container(pos, depth, "}")
        if c == "[":
            return self.container(pos, depth, "]")
        if c == '"':
            return self.string(pos)
        found = NUMBER.match(self.text, pos)
        if found and found.end() > pos:
            return Node(pos, found.end(), Number(found.group()))
        for word, literal in LITERALS.items():
            if self.text.startswith(word, pos):
                return Node(pos, pos + len(word), literal)
        bare = re.match(r"[A-Za-z]+", self.text[pos:])
        raise self.error(pos, f"{bare.group()!r} is not JSON" if bare else "expected a value")

    def string(self, pos: int) -> Node:
        try:
            value, end = STRINGS.raw_decode(self.text, pos)
        except json.JSONDecodeError as e:
            raise self.error(e.pos, e.msg) from None
        if SURROGATE.search(value):
            raise self.error(pos, "a lone surrogate (\\ud800-\\udfff) is not a character")
        return Node(pos, end, value)

    def container(self, pos: int, depth: int, close: str) -> Node:
        node = Node(pos, pos, {} if close == "}" else [])
        pos = self.skip(pos + 1)
        if self.text[pos : pos + 1] == close:
            node.end = pos + 1
            return node
        while True:
            if close == "}":
                if self.text[pos : pos + 1] != '"':
                    raise self.error(pos, "expected a member name in double quotes")
                key = self.string(pos)
                node.key_starts.append(pos)
                node.keys.append(key.value)  # type: ignore[arg-type]
                pos = self.skip(key.end)
                if self.text[pos : pos + 1] != ":":
                    raise self.error(pos, "expected ':'")
                pos = self.skip(pos + 1)
            child = self.value(pos, depth + 1)
            node.children.append(child)
            pos = self.skip(child.end)
            c = self.text[pos : pos + 1]
            if c == close:
                node.end = pos + 1
                break
            if c != ",":
                raise self.error(pos, f"expected ',' or '{close}'")
            pos = self.skip(pos + 1)
        if close == "}":
            node.value = {k: child.value for k, child in zip(node.keys, node.children, strict=True)}
        else:
            node.value = [child.value for child in node.children]
        return node


def render(value: object) -> str:
    """`value` (plain JSON types) as one-line JSON text."""
    return json.dumps(value, ensure_ascii=False)


def insert(text: str, container: Node, value: object, key: str | None = None) -> str:
    """`text` with `value` appended to `container` (as member `key` of an object), laid out like the
    container's other children: the separator before the last child is reused, so removing the new one
    (`remove`) gives `text` back byte for byte."""
    count = len(container.children)
    if count:
        first = container.child_start(0)
        before_last = container.child_start(count - 1)
        if count > 1:
            sep = text[container.children[count - 2].end : before_last]
        else:
            sep = "," + text[container.start + 1 : first]
        sep = "," + sep[sep.index(",") + 1 :]
        at = container.children[-1].end
        return text[:at] + sep + _item(key, value, sep, text) + text[at:]
    own = _indent_of(text, container.start)
    if "\n" not in text.strip() and text.strip() != "{}":  # a one-line file stays one line (not a new one)
        inner = _item(key, value, "", text)
    else:
        child = "\n" + own + _unit(text)
        inner = child + _item(key, value, child, text) + "\n" + own
    return text[: container.start + 1] + inner + text[container.end - 1 :]


def remove(text: str, container: Node, i: int) -> str:
    """`text` without child `i` of `container` and the separator that joined it (an emptied container
    becomes `{}` or `[]`)."""
    count = len(container.children)
    if count == 1:
        return text[: container.start + 1] + text[container.end - 1 :]
    if i > 0:
        return text[: container.children[i - 1].end] + text[container.children[i].end :]
    return text[: container.child_start(0)] + text[container.child_start(1) :]


def _item(key: str | None, value: object, sep: str, text: str) -> str:
    """The new child's text: multi-line at the indentation after `sep`'s last line break, else one line."""
    if "\n" in sep:
        indent = sep[sep.rindex("\n") + 1 :]
        body = json.dumps(value, ensure_ascii=False, indent=_unit(text)).replace("\n", "\n" + indent)
        colon = ": "
    else:
        spaced = not sep or sep.endswith(" ") or ", " in text or ": " in text
        separators = (", ", ": ") if spaced else (",", ":")
        body = json.dumps(value, ensure_ascii=False, separators=separators)
        colon = separators[1]
    return body if key is None else json.dumps(key, ensure_ascii=False) + colon + body


def _indent_of(text: str, pos: int) -> str:
    """The whitespace that starts the line holding `pos`."""
    line = text[text.rfind("\n", 0, pos) + 1 : pos]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _unit(text: str) -> str:
    """The file's indentation step: the first indented line's leading whitespace (two spaces if none)."""
    found = re.search(r"\n([ \t]+)\S", text)
    return found.group(1) if found else "  "
