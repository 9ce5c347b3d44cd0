"""The post-build (PostToolUse on Bash) and error-context (PostToolUseFailure) hooks: notes on an error."""

from __future__ import annotations

import re

from gitwiki.agent_hooks.extract import BUILD_COMMAND, error_lines
from gitwiki.agent_hooks.handlers import Call

# Lines that say a build or test run failed, in the output of a command that did not report its exit status.
_FAILED = re.compile(r"\bFAILED\b|\bFAIL\b|\bERROR\b|\berror(?:\[\w+\])?:|Traceback|panic:|fatal:|\bfailed\b")


def post_build(call: Call) -> dict | None:
    tool_input = call.event.get("tool_input") or {}
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    if not isinstance(command, str) or not BUILD_COMMAND.search(command):
        return None
    call.session.phase = "Verify"
    response = call.event.get("tool_response")
    output, status = _output(response)
    if not (status not in (None, 0) or (status is None and _FAILED.search(output))):
        return None
    return _error_notes(call, "PostToolUse", output)


def error_context(call: Call) -> dict | None:
    error = call.event.get("error")
    if not isinstance(error, str) or call.event.get("is_interrupt"):
        return None
    return _error_notes(call, "PostToolUseFailure", error)


def _error_notes(call: Call, event: str, output: str) -> dict | None:
    call.session.phase = "Debug"
    lines = error_lines(output)
    if not lines:
        return None
    query = " ".join(lines)
    return call.answer(event, f"gitwiki notes on this error ({lines[0][:80]}):", call.search(query), query)


def _output(response) -> tuple[str, int | None]:
    """A Bash tool response's text and exit status (None when it does not say)."""
    if not isinstance(response, dict):
        return (response if isinstance(response, str) else ""), None
    text = "\n".join(str(response.get(k) or "") for k in ("stdout", "stderr", "output"))
    for key in ("exit_code", "exitCode", "returncode", "code"):
        if isinstance(response.get(key), int):
            return text, response[key]
    return text, None
