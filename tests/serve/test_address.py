"""serve/address.py: the lines a connection reads, however the peer's bytes are cut into reads; the line that opens
a session."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gitwiki.serve import address
from gitwiki.serve.address import Lines


class Reads:
    """A socket whose recv() hands out the given pieces, then the end of the connection."""

    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = list(pieces)

    def recv(self, size: int) -> bytes:
        return self.pieces.pop(0) if self.pieces else b""

    def settimeout(self, seconds: float) -> None:
        assert seconds > 0


line = st.binary(max_size=40).map(lambda b: b.replace(b"\n", b""))


@given(st.lists(line, max_size=6), st.lists(st.integers(1, 50), max_size=20), st.binary(max_size=10))
def test_every_line_comes_back_whole_and_in_order_however_the_reads_cut_it(lines, cuts, tail):
    stream = b"".join(x + b"\n" for x in lines) + tail.replace(b"\n", b"")
    pieces, at = [], 0
    for n in cuts:
        pieces.append(stream[at : at + n])
        at += n
    pieces.append(stream[at:])
    reader = Lines(Reads([p for p in pieces if p]))  # type: ignore[arg-type]
    assert [reader.next(deadline=None) for _ in lines] == lines
    with pytest.raises(ValueError, match="closed before a whole line"):
        reader.next()


def test_a_line_past_the_limit_is_refused_and_a_late_one_times_out():
    with pytest.raises(ValueError, match="too long"):
        Lines(Reads([b"x" * 10, b"x" * 10, b"\n"])).next(limit=15)  # type: ignore[arg-type]
    assert Lines(Reads([b"x" * 10 + b"\n"])).next(limit=15) == b"x" * 10  # type: ignore[arg-type]
    with pytest.raises(TimeoutError):
        Lines(Reads([b"partial"])).next(deadline=0.0)  # type: ignore[arg-type]


text = st.text(max_size=30)  # any code point, lone surrogates included (paths decoded with surrogateescape)


@given(text, text, st.dictionaries(text, text, max_size=5))
def test_a_session_request_is_what_json_dumps_writes(root, start, env):
    """`session_request` builds the line with `_json`'s encoder alone; the owner reads it with `json.loads`."""
    original = address.environment
    address.environment = lambda: env  # type: ignore[assignment]
    try:
        line = address.session_request(root, start)
    finally:
        address.environment = original  # type: ignore[assignment]
    message = {"protocol": address.PROTOCOL, "session": True, "root": root, "start": start, "env": env}
    assert line == json.dumps(message).encode() + b"\n"
    assert json.loads(line) == message
