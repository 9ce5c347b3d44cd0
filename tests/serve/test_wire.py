"""serve/wire.py: json.dumps and json.loads, without the json package, on anything a line can carry."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gitwiki.serve import wire

values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@given(values)
def test_dumps_writes_what_json_dumps_writes(value):
    assert wire.dumps(value) == json.dumps(value)


@given(st.text(max_size=60) | values.map(json.dumps) | values.map(lambda v: f" \n{json.dumps(v)}\t "))
def test_loads_reads_what_json_loads_reads_and_refuses_what_it_refuses(text):
    try:
        expected = json.loads(text)
    except ValueError:
        with pytest.raises(ValueError):
            wire.loads(text)
        return
    got = wire.loads(text)
    assert json.dumps(got) == json.dumps(expected)  # NaN compares unequal to itself; its text does not


def test_what_json_cannot_write_is_refused_as_json_refuses_it():
    with pytest.raises(TypeError, match="not JSON serializable"):
        wire.dumps({"a": object()})


def test_a_broken_line_is_a_value_error_in_a_process_without_the_json_package():
    """The relay's process does not import json: the C scanner's own error class was then missing, `{not json`
    a SystemError that ended the relay, and the session's initialize was never answered."""
    from tests.helpers import python_prints

    code = (
        "import sys\n"
        "from gitwiki.serve import wire\n"
        "print('json' in sys.modules)\n"
        "for line in ('{not json', '{\"id\": 1', '[1,]'):\n"
        "    try:\n"
        "        wire.loads(line)\n"
        "    except ValueError as e:\n"
        "        print(type(e).__name__)\n"
    )
    assert python_prints(code) == ["False", "JSONDecodeError", "JSONDecodeError", "ValueError"]
