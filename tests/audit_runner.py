"""Run gitwiki commands and hooks in one process under a Python audit hook, and say what they touched.

`python -m tests.audit_runner PLAN.json`: the plan names the checkout, the CLI commands and the hook events;
the report (JSON, at the plan's `out`) lists every file path opened (and whether for writing), every
folder listed, created or removed, every socket connection, every git remote operation and every process
started, and for each command its exit status, stderr and seconds. tests/test_hostile_config.py judges it.
Each command runs under an alarm (`limit` seconds): a read that blocks (a FIFO) ends as a timeout.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import sys
import time
import traceback
from typing import Any

PATH_EVENTS = {
    "open",
    "os.listdir",
    "os.scandir",
    "os.mkdir",
    "os.remove",
    "os.rename",
    "os.replace",
    "os.rmdir",
    "os.symlink",
    "os.link",
    "os.chmod",
    "os.chown",
    "os.utime",
    "os.truncate",
    "os.mkfifo",
    "os.mknod",
    "shutil.rmtree",
    "shutil.copyfile",
    "shutil.move",
    "sqlite3.connect",
}
WRITES = {"os.mkdir", "os.remove", "os.rename", "os.replace", "os.rmdir", "os.symlink", "os.link", "os.chmod"}
WRITES |= {"os.chown", "os.utime", "os.truncate", "os.mkfifo", "os.mknod", "shutil.rmtree", "shutil.move"}
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND

touched: list[tuple[str, str, bool]] = []  # (event, path, writes)
network: list[str] = []
processes: list[list[str]] = []


def _path(value: Any) -> str | None:
    if isinstance(value, bytes):
        return os.fsdecode(value)
    if isinstance(value, str):
        return value
    if hasattr(value, "__fspath__"):
        return str(os.fspath(value))
    return None  # a file descriptor


def audit(event: str, args: tuple[Any, ...]) -> None:
    if event in PATH_EVENTS:
        writes = event in WRITES
        if event == "open" and len(args) >= 3:
            mode, flags = args[1], args[2]
            writes = bool(isinstance(mode, str) and set(mode) & set("wax+")) or bool(
                isinstance(flags, int) and flags & WRITE_FLAGS
            )
        for value in (
            args[:2] if event in ("os.rename", "os.replace", "os.symlink", "os.link", "shutil.move") else args[:1]
        ):
            path = _path(value)
            if path is not None:
                touched.append((event, os.path.realpath(path), writes))
    elif event in ("socket.connect", "socket.sendto"):
        network.append(repr(args[1]))
    elif event == "socket.getaddrinfo":
        network.append(f"getaddrinfo {args[0]!r}")
    elif event == "subprocess.Popen":
        processes.append([str(a) for a in (args[1] or [])] + [f"cwd={args[2]}"])


class Timeout(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise Timeout


def _run(call: Any, limit: float) -> tuple[int, str, str, float]:
    out, err = io.StringIO(), io.StringIO()
    started = time.monotonic()
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = call()
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except Timeout:
        code = -1
        err.write("TIMEOUT\n")
    except BaseException:
        code = -2
        err.write(traceback.format_exc())
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    said = err.getvalue()
    said = said if len(said) <= 8000 else said[:4000] + "\n[...]\n" + said[-4000:]
    return code, out.getvalue()[-2000:], said, time.monotonic() - started


def _guard_remotes() -> None:
    """pygit2 talks to remotes in C, out of the audit hook's sight: record every remote operation instead."""
    import pygit2

    for name in ("fetch", "ls_remotes", "list_heads", "push", "connect"):
        if hasattr(pygit2.Remote, name):

            def refuse(self: Any, *a: Any, _name: str = name, **k: Any) -> Any:
                network.append(f"pygit2 {_name} {getattr(self, 'url', '?')}")
                raise pygit2.GitError("network refused by the audit runner")

            setattr(pygit2.Remote, name, refuse)


def _hook(run: Any, name: str, event: dict[str, Any]) -> int:
    answer = run(name, json.dumps(event).encode(), ".")
    if answer:
        print(answer)
    return 0  # what `gitwiki-hook` exits with once it answered


def main(plan_file: str) -> None:
    with open(plan_file, encoding="utf-8") as f:
        plan = json.load(f)
    _guard_remotes()
    signal.signal(signal.SIGALRM, _alarm)
    from gitwiki.agent_hooks.run import run
    from gitwiki.cli import main as cli

    os.chdir(plan["root"])
    sys.addaudithook(audit)
    results = []
    for args in plan["commands"]:
        code, out, err, took = _run(lambda args=args: cli(["-C", plan["root"], *args]), plan["limit"])
        results.append({"run": args, "code": code, "out": out, "err": err, "seconds": took})
    for name, event in plan["hooks"]:
        code, out, err, took = _run(lambda n=name, e=event: _hook(run, n, e), plan["limit"])
        results.append({"run": ["hook", name], "code": code, "out": out, "err": err, "seconds": took})
    report = {"results": results, "touched": touched, "network": network, "processes": processes}
    with open(plan["out"], "w", encoding="utf-8") as f:
        json.dump(report, f)


if __name__ == "__main__":
    main(sys.argv[1])
