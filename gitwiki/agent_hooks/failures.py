"""The post-build (PostToolUse on Bash) and error-context (PostToolUseFailure) hooks: notes on an error."""

from __future__ import annotations

import re

from gitwiki.agent_hooks.handlers import Call

# A build or test command: the post-build hook looks at no other Bash call.
BUILD_COMMAND = re.compile(
    r"(?:^|[\s;&|(])(?:python3?\s+-m\s+)?(?:pytest|tox|nox|make|cmake|ninja|meson|cargo|go\s+(?:test|build|vet)|"
    r"npm|pnpm|yarn|bun|npx|jest|vitest|mocha|mvn|gradle|\./gradlew|dotnet|tsc|mypy|ruff|flake8|eslint|gcc|g\+\+|"
    r"clang|javac|rspec|rake|bundle\s+exec|mix|swift|phpunit|bazel|deno)(?=$|[\s;&|)])"
)
_ERROR_LINE = re.compile(
    r"error|exception|fail|fatal|panic|traceback|undefined|cannot|can't|could not|not found|no such|denied|"
    r"refused|timed? ?out|assert|expected|unresolved|segmentation",
    re.IGNORECASE,
)
_NOISE = re.compile(r"(?:[\w.~-]*/[\w./~-]+)|0x[0-9a-fA-F]+|\b\d+(?:\.\d+)*\b|[=_\-*#~^]{3,}|line \d+", re.IGNORECASE)
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


def error_lines(output: str, limit: int = 3) -> list[str]:
    """The last `limit` distinct lines of `output` that read like an error, without paths and numbers."""
    out: list[str] = []
    for line in reversed(output.splitlines()[-400:]):
        if not _ERROR_LINE.search(line) or line.strip().startswith("Traceback (most recent call last)"):
            continue
        clean = re.sub(r"\s+", " ", _NOISE.sub(" ", line)).strip(" :-|>")[:200]
        if len(clean) > 8 and clean not in out:
            out.append(clean)
            if len(out) == limit:
                break
    return out
