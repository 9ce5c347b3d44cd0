"""The post-build (PostToolUse on Bash) and error-context (PostToolUseFailure) hooks: notes on an error.

What is searched is the failure's message, as each common toolchain prints it: the exception line of a Python
traceback (pytest's `E   …` lines, unittest), rustc's `error[E…]: …` and a Rust panic's message, Go's
`file.go:N: …` under `--- FAIL`, tsc's `error TS…: …`, mypy's and C compilers' `error: …`, ruff's and flake8's
rule lines, jest's and vitest's failure messages, npm's `npm ERR!`/`npm error` lines
(tests/agent_hooks/fixtures/failures holds their real outputs). Output none of them explains falls back to
its last lines that read like an error, without paths and numbers.

Every match is linear in the output's length: a hook runs on every Bash call, and one long line (a minified
bundle, a base64 blob in an assertion) must not stall it. Only the end of the output and the start of each
line are looked at (MAX_OUTPUT, MAX_LINE), each pattern is anchored or a literal, and paths and numbers are
dropped token by token rather than by a pattern that rescans a line from every position (which took 31 s on
one 100,000-character line).
"""

from __future__ import annotations

import re
from typing import Any

from gitwiki.agent_hooks.handlers import Call

# A build or test command: the post-build hook looks at no other Bash call.
BUILD_COMMAND = re.compile(
    r"(?:^|[\s;&|(])(?:python3?\s+-m\s+)?(?:pytest|unittest|tox|nox|make|cmake|ninja|meson|cargo|"
    r"go\s+(?:test|build|vet)|npm|pnpm|yarn|bun|npx|jest|vitest|mocha|mvn|gradle|\./gradlew|dotnet|tsc|mypy|ruff|"
    r"flake8|eslint|gcc|g\+\+|clang|javac|rspec|rake|bundle\s+exec|mix|swift|phpunit|bazel|deno)(?=$|[\s;&|)])"
)
MAX_COMMAND = 4096  # characters of a command looked at for a build tool
MAX_OUTPUT = 1 << 20  # characters of output looked at, from its end, where runs print their failures
MAX_LINES = 2000  # of those, the last lines
MAX_LINE = 1000  # characters of one line looked at: a message says what failed in its first words

# Lines that say a build or test run failed, in the output of a command that did not report its exit status.
_FAILED = re.compile(
    r"\bFAILED\b|\bFAIL\b|\bERROR\b|\berror(?:\[\w+\])?:|\berror TS\d+|Traceback|panic:|panicked at|fatal:|"
    r"\bfailed\b|^npm (?:ERR!|error) |^Found \d+ errors?\b|\.go:\d+:\d+: ",
    re.MULTILINE,
)
_ERROR_LINE = re.compile(
    r"error|exception|fail|fatal|panic|traceback|undefined|cannot|can't|could not|not found|no such|denied|"
    r"refused|timed? ?out|assert|expected|unresolved|segmentation",
    re.IGNORECASE,
)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")

# The toolchains' failure lines, each anchored at the line start (`match`) so it is tried once per line.
# A Python exception line: a traceback's last line, pytest's `E   KeyError: …`, unittest, a JS `Error: …`.
_EXCEPTION = re.compile(
    r"\s*(?:E\s+)?((?:[A-Za-z_][\w.]*)?(?:Error|Exception|Exit|Interrupt|Failure|Warning|Fault)(?::\s.*)?)$"
)
_PYTEST_SUMMARY = re.compile(r"(?:FAILED|ERROR) \S+ - (.+)$")  # pytest's short test summary
_PYTEST_DETAIL = re.compile(r"E {2,}(\S.*)$")  # an `E` line that is no exception: `assert …`, `+  where …`
# What failed, by name: pytest's `____ test_x ____`, unittest's `FAIL: test_x (…)`, cargo's `---- t stdout ----`,
# go's `--- FAIL: TestX (0.00s)`.
_TEST_TITLE = re.compile(r"(?:_{3,} (\S+) _{3,}|(?:FAIL|ERROR): (\S+) \(.*|---- (\S+) stdout ----|--- FAIL: (\S+).*)$")
_RUSTC = re.compile(r"error(?:\[E\d+\])?: .+$")
_RUSTC_NOISE = re.compile(r"error: (?:could not compile|aborting due to|test failed, to rerun|Found \d+ errors?)")
_PANIC_HEAD = re.compile(r"thread '[^']*'(?: \(\d+\))? panicked at (?:'(.*)', )?\S+:\d+:\d+:?$")
_GO_LOCATION = re.compile(r"\s*\S+\.go:\d+(?::\d+)?: (.+)$")  # `t.Error` under `--- FAIL`, and build errors
_GO_PANIC = re.compile(r"panic: (.+)$")
_TSC = re.compile(r"\S+?(?:\(\d+,\d+\)|:\d+:\d+) ?:? (?:- )?(error TS\d+: .+)$")
_COMPILER = re.compile(r"[^\s:][^:]*:\d+:(?:\d+:)? (?:fatal )?error: (.+)$")  # mypy, gcc, clang, swift
_RULE = re.compile(r"(?:\S+:\d+:\d+: )?([A-Z]{1,4}\d{2,4}) (?:\[\*\] )?(.+)$")  # ruff (both formats), flake8
_NPM = re.compile(r"npm (?:ERR!|error) +(\S.*)$")
_NPM_NOISE = re.compile(
    r"(?:A complete log|To see a list|npm run$|code \w+$|errno |Lifecycle script|command (?:failed|sh)|path |"
    r"workspace |location |/|\S+\.log$)"
)
_JEST_TITLE = re.compile(r"\s*● (.+)$")  # then the message on the next non-empty line
_VITEST_ARROW = re.compile(r"\s+→ (.+)$")

# How telling a message is: the failure itself, then a summary of it; when neither is printed, the details
# of a bare assertion, pytest's cut summaries (which repeat its `E` lines), then what failed by name.
MESSAGE, SUMMARY, DETAIL, TITLE = 0, 1, 2, 3


def post_build(call: Call) -> dict[str, Any] | None:
    tool_input = call.event.get("tool_input") or {}
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    if not isinstance(command, str) or not BUILD_COMMAND.search(command[:MAX_COMMAND]):
        return None
    call.session.phase = "Verify"
    response = call.event.get("tool_response")
    output, status = _output(response)
    if not (status not in (None, 0) or (status is None and _FAILED.search(_tail(output)))):
        return None
    return _error_notes(call, "PostToolUse", output)


def error_context(call: Call) -> dict[str, Any] | None:
    error = call.event.get("error")
    if not isinstance(error, str) or call.event.get("is_interrupt"):
        return None
    return _error_notes(call, "PostToolUseFailure", error)


def _error_notes(call: Call, event: str, output: str) -> dict[str, Any] | None:
    call.session.phase = "Debug"
    lines = error_lines(output)
    if not lines:
        return None
    query = " ".join(lines)
    return call.answer(event, f"gitwiki notes on this error ({lines[0][:80]}):", call.search(query), query)


def _output(response: object) -> tuple[str, int | None]:
    """A Bash tool response's text and exit status (None when it does not say)."""
    if not isinstance(response, dict):
        return (response if isinstance(response, str) else ""), None
    text = "\n".join(str(response.get(k) or "") for k in ("stdout", "stderr", "output"))
    for key in ("exit_code", "exitCode", "returncode", "code"):
        if isinstance(response.get(key), int):
            return text, response[key]
    return text, None


def _tail(output: str) -> str:
    return output[-MAX_OUTPUT:]


def error_lines(output: str, limit: int = 3) -> list[str]:
    """Up to `limit` distinct failure messages in `output`: the toolchains' own (see the module's doc), the
    failures themselves before summaries and test names, in the order printed; else the last lines that read
    like an error, without paths and numbers."""
    lines = [_ANSI.sub("", line[:MAX_LINE]) for line in _tail(output).splitlines()[-MAX_LINES:]]
    found = sorted(_messages(lines), key=lambda m: m[0])  # stable: in the order printed within a rank
    messages = _distinct([m for rank, m in found if rank <= SUMMARY], limit)
    return messages or _distinct([m for rank, m in found if rank > SUMMARY], limit) or _error_like(lines, limit)


def _distinct(messages: list[str], limit: int) -> list[str]:
    """The first `limit` of `messages` that do not repeat an earlier one, cleaned."""
    out: list[str] = []
    for message in messages:
        clean = _clean(message)
        if len(clean) > 3 and not any(_same(clean, kept) for kept in out):
            out.append(clean)
            if len(out) == limit:
                break
    return out


def _messages(lines: list[str]) -> list[tuple[int, str]]:
    """(rank, message) of every line a toolchain prints for a failure; a jest title or a panic's head makes
    the next non-empty line the message."""
    found: list[tuple[int, str]] = []
    waiting = False  # the next non-empty line is a message
    for line in lines:
        if waiting and line.strip():
            waiting = False
            if not line.strip().startswith("expect("):  # jest's matcher, not what failed: its values follow
                found.append((MESSAGE, line.strip()))
            continue
        if m := _PANIC_HEAD.match(line):
            if m.group(1):  # Rust before 1.73: the message is in the line
                found.append((MESSAGE, m.group(1)))
            else:
                waiting = True
        elif m := _JEST_TITLE.match(line):
            found.append((TITLE, m.group(1)))
            waiting = True
        elif m := _TEST_TITLE.match(line):
            found.append((TITLE, next(g for g in m.groups() if g)))
        elif m := _PYTEST_SUMMARY.match(line):
            summary = m.group(1)
            found.append((DETAIL, summary[: summary.rfind(" ")] if summary.endswith("...") else summary))
        elif (m := _RUSTC.match(line)) and not _RUSTC_NOISE.match(line):
            found.append((MESSAGE, m.group(0)))
        elif m := _TSC.match(line) or _COMPILER.match(line) or _GO_LOCATION.match(line):
            found.append((MESSAGE, m.group(1)))
        elif m := _EXCEPTION.match(line) or _GO_PANIC.match(line) or _VITEST_ARROW.match(line):
            found.append((MESSAGE, m.group(1)))
        elif m := _RULE.match(line):
            found.append((MESSAGE, f"{m.group(1)} {m.group(2)}"))
        elif m := _PYTEST_DETAIL.match(line):
            found.append((DETAIL, m.group(1)))
        elif (m := _NPM.match(line)) and not _NPM_NOISE.match(m.group(1)):
            found.append((SUMMARY, m.group(1)))
    return found


def _same(message: str, kept: str) -> bool:
    """Whether `message` repeats `kept` or the other way round: pytest's summary repeats an `E` line, vitest's
    `→` line the exception's message without its name."""
    return message in kept or kept in message


def _error_like(lines: list[str], limit: int) -> list[str]:
    """The last `limit` distinct lines that read like an error, without paths and numbers."""
    out: list[str] = []
    for line in reversed(lines):
        if not _ERROR_LINE.search(line) or line.strip().startswith("Traceback (most recent call last)"):
            continue
        clean = _clean(line).strip(" :-|>")
        if len(clean) > 8 and clean not in out:
            out.append(clean)
            if len(out) == limit:
                break
    return out


_NUMBER = re.compile(r"[+-]?\d[\d.,:_-]*[A-Za-z]{0,3}")  # 12, 0.62s, 2026-12-24, 1.2.3, 10:30, 3ms
_PUNCTUATION = "()[]{}<>,;:'\"`"


def _clean(text: str) -> str:
    """`text` with its paths, hex and plain numbers and separator runs left out, word by word: a token is
    looked at once, so this is linear in the text."""
    kept = []
    for token in text.split():
        core = token.strip(_PUNCTUATION)
        if (
            not core
            or "/" in core
            or core.lower().startswith("0x")
            or _NUMBER.fullmatch(core)
            or (len(core) >= 3 and not core.strip("=_-*#~^⎯"))
        ):
            continue
        kept.append(token)
    return " ".join(kept)[:200]
