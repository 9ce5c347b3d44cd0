"""JSON as the serve socket's lines carry it, from `_json`'s C encoder and scanner: what `json.dumps` and `json.loads`
do with their defaults, without the json package, whose import brings `re` (~6 ms of a hook's or a later session's
start, docs/research/sessions-bridge.md). The lean relay (`mcp.relay`), a later session's fast start
(`serve.address.session_request`) and the hooks' client (`agent_hooks.forward`) speak through it; everything else
uses json.
"""

from __future__ import annotations

import _json


class _Context:
    """What `_json.make_scanner` asks of `json.JSONDecoder`: json.loads's defaults, without the json package."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int

    @staticmethod
    def parse_constant(name: str) -> float:
        return float(name.lower().replace("infinity", "inf"))


def _unencodable(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


_scan = _json.make_scanner(_Context())  # type: ignore[arg-type]  # duck-typed: the attributes above


def scan(text: str, start: int) -> tuple[object, int]:
    """The JSON value at `start` of `text` and where it ends; StopIteration or ValueError where there is none."""
    try:
        return _scan(text, start)
    except SystemError:
        # The C scanner raises json.decoder's JSONDecodeError, which it finds only once the json package is
        # imported: in a process without it, `{x` was a SystemError (it ended a relay, and a session's initialize
        # sent with it was never answered). Imported now, for this broken line only, the same scan says why.
        import json.decoder  # noqa: F401

        return _scan(text, start)


# json.dumps's defaults: ASCII strings, ", " and ": ", no circular check (the values here are built, not received)
_encode = _json.make_encoder(None, _unencodable, _json.encode_basestring_ascii, None, ": ", ", ", False, False, True)
WHITESPACE = " \t\r\n"


def dumps(value: object) -> str:
    """`json.dumps(value)`, byte for byte."""
    return "".join(_encode(value, 0))


def loads(text: str) -> object:
    """`json.loads(text)` for a str; ValueError (json's JSONDecodeError is one) for anything it refuses."""
    start = len(text) - len(text.lstrip(WHITESPACE))
    try:
        value, end = scan(text, start)
    except StopIteration:
        raise ValueError("no JSON value") from None
    if text[end:].strip(WHITESPACE):
        raise ValueError("extra data after the JSON value")
    return value
