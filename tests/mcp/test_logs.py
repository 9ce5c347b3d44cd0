"""mcp.logs: records go through `logging` until `plain` is called, and then come out on stderr as `logging` with
`logs.FORMAT` writes them, without the module."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from gitwiki.mcp import logs


@pytest.fixture
def plain(monkeypatch):
    monkeypatch.setattr(logs, "_plain", [])  # `plain` holds for the process: undone after the test
    logs.plain("INFO")


def _through_logging(record: logging.LogRecord) -> str:
    return logging.Formatter(logs.FORMAT).format(record) + "\n"


def test_a_plain_line_is_the_line_logging_writes(plain, capsys):
    log = logs.Logger("gitwiki.bridge")
    log.info("connected after %.0f ms", 12.4)
    log.debug("not at INFO")
    try:
        raise ValueError("a bad line")
    except ValueError:
        log.exception("could not pass a line on")
        exc_info = sys.exc_info()
    written = capsys.readouterr().err
    expected = [
        logging.LogRecord("gitwiki.bridge", logging.INFO, __file__, 1, "connected after %.0f ms", (12.4,), None),
        logging.LogRecord("gitwiki.bridge", logging.ERROR, __file__, 1, "could not pass a line on", (), exc_info),
    ]
    assert written == "".join(_through_logging(r) for r in expected)
    assert written.startswith("gitwiki serve: INFO gitwiki.bridge: connected after 12 ms\n")
    assert "ValueError: a bad line\n" in written


def test_without_plain_a_record_goes_through_logging(monkeypatch, caplog):
    monkeypatch.setattr(logs, "_plain", [])
    with caplog.at_level(logging.INFO, logger="gitwiki.mcp"):
        logs.Logger("gitwiki.mcp").info("refused a line: %s", "not JSON")
    assert [(r.name, r.levelname, r.getMessage()) for r in caplog.records] == [
        ("gitwiki.mcp", "INFO", "refused a line: not JSON")
    ]


def test_a_plain_process_never_imports_logging():
    code = (
        "import sys; from gitwiki.mcp import logs; logs.plain('WARNING'); log = logs.Logger('x'); log.info('no');"
        "log.warning('yes %d', 1); print('logging' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == "False\n" and done.stderr == "gitwiki serve: WARNING x: yes 1\n"
