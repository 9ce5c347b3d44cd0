"""A cloned checkout's `.gitwiki.toml`, built by an attacker: every key with paths outside the repository, `..`,
symlinks out, devices, FIFOs, URLs, huge and odd values. Whatever it says, gitwiki reads and writes only the
repository, its index dir and the user's own dirs, connects nowhere, ends every command in time and says a
refusal in one line, never a traceback (the classes are gitwiki.trust.TABLE).

Two layers: every key × every hostile value through `config.load` in this process (fast, exhaustive), then
hypothesis-built files mixing several keys, with the main commands and the agent hooks run in a subprocess
under an audit hook (tests/audit_runner.py) that records every path opened, every connection and process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import typing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from gitwiki import config, trust
from gitwiki.errors import GitwikiError
from tests.helpers import ROOT, GitRepoFixture

LIMIT = 20.0  # seconds one command may take under the audit (a FIFO read would block for ever)
# Whole hostile files per run (each a subprocess of 13 runs); GITWIKI_FUZZ_EXAMPLES raises it for a long run.
EXAMPLES = max(10, int(os.environ.get("GITWIKI_FUZZ_EXAMPLES", "10")) // 4)

# Where an attacker points: each relative to the repo root unless absolute; VICTIM and OUTSIDE are made per test.
HOSTILE_PATHS = (
    "/etc/passwd",
    "/dev/zero",
    "/dev/random",
    "/proc/self/environ",
    "{outside}/pipe",  # a FIFO
    "{victim}",
    "{victim}/.git/gitwiki",
    "../victim",
    "../victim/.git/gitwiki",
    "wiki/../../victim",
    "out",  # a symlink in the repo to the victim
    "out/notes.md",
    ".git",
    ".git/config",
    "~",
    "~/.ssh/id_rsa",
    "https://127.0.0.1:9/x.git",
    "http://203.0.113.7/x",
    "s3://attacker/bucket",
    "file:///etc/passwd",
    "",
    ".",
    "..",
    "a" * 5000,
    "wiki/\u202e.md",
    "x\x7fy",
    "/",
)
HUGE_INTS = (0, 1, 2**31, 2**63 - 1, 2**63, 10**30)
ODD_FLOATS = (float("nan"), float("inf"), -1.0, 0.0, 1e308)


def _values(annotation: Any, wrong: bool = True) -> list[Any]:
    """The hostile values of a field's type, and (`wrong`) a few of another type."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    kind = args[0] if args else annotation
    if typing.get_origin(kind) is tuple:
        return [list(HOSTILE_PATHS[:8]), ["**/../../*"], []] + (["not a list"] if wrong else [])
    if kind is bool:
        return [True, False] + (["yes"] if wrong else [])
    if kind is int:
        return [*HUGE_INTS] + ([-1, 1.5, "9"] if wrong else [])
    if kind is float:
        return [*ODD_FLOATS] + (["0.5"] if wrong else [])
    return [*HOSTILE_PATHS] + ([7] if wrong else [])


def _records() -> dict[str, type]:
    return {"corpus": config.CorpusConfig, "repository": config.RepositoryConfig, **config.SECTIONS}


def _cases() -> list[tuple[str, Any]]:
    out = []
    for key in trust.TABLE:
        table, field = key.split(".")
        out.extend((key, v) for v in _values(typing.get_type_hints(_records()[table])[field]))
    return out


CASES = _cases()


def _toml(value: Any) -> str:
    if isinstance(value, float) and value != value:
        return "nan"
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return "inf" if value > 0 else "-inf"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(value)  # a TOML basic string is a JSON string (\u escapes included)


def render(settings_: dict[str, Any], places: dict[str, str]) -> str:
    """`.gitwiki.toml` text setting each "table.key" in `settings_`; {victim}/{outside} filled in."""
    tables: dict[str, dict[str, Any]] = {}
    for key, value in settings_.items():
        table, field = key.split(".")
        if isinstance(value, str):
            value = value.format(**places)
        elif isinstance(value, list):
            value = [v.format(**places) if isinstance(v, str) else v for v in value]
        tables.setdefault(table, {})[field] = value
    lines = []
    for table, fields in tables.items():
        if table in ("corpus", "repository"):
            fields = {"name": "x", **fields}
            if table == "repository" and "url" not in fields and "path" not in fields:
                fields["url"] = "https://127.0.0.1:9/x.git"
            lines.append(f"[[{table}]]")
        else:
            lines.append(f"[{table}]")
        lines += [f"{k} = {_toml(v)}" for k, v in fields.items()]
    return "\n".join(lines) + "\n"


def scene(tmp_path: Path) -> tuple[GitRepoFixture, dict[str, str]]:
    """A checkout with a wiki and a memory page, a victim project beside it, a FIFO outside, a symlink out."""
    victim = tmp_path / "victim"
    (victim / ".git/gitwiki").mkdir(parents=True)
    (victim / "notes.md").write_text("# Secret\n\nthe victim's own notes\n")
    (tmp_path / "outside").mkdir()
    os.mkfifo(tmp_path / "outside/pipe")
    (tmp_path / "repo").mkdir()
    repo = GitRepoFixture(tmp_path / "repo")
    repo.commit(
        "pages",
        {
            "wiki/a.md": "# Rollback\n\nTo roll back a release, revert the tag.\n",
            "wiki/memory/deploys.md": "# Deploys\n\n- roll back with the tag [modified: 2026-01-01 00:00]\n",
        },
    )
    (repo.path / "out").symlink_to(victim)
    return repo, {"victim": str(victim), "outside": str(tmp_path / "outside")}


def layout(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The files around a checkout an attacker aims at: a victim project beside it, a FIFO outside, a symlink
    out of the checkout."""
    victim = tmp_path / "victim"
    (victim / ".git/gitwiki").mkdir(parents=True)
    (victim / "notes.md").write_text("# Secret\n\nthe victim's own notes\n")
    (tmp_path / "outside").mkdir()
    os.mkfifo(tmp_path / "outside/pipe")
    root = tmp_path / "repo"
    (root / "wiki").mkdir(parents=True)
    (root / "out").symlink_to(victim)
    return root, {"victim": str(victim), "outside": str(tmp_path / "outside")}


def load_problem(root: Path, key: str, value: Any, places: dict[str, str], user_file: Path) -> str | None:
    """What is wrong with loading a checkout file that sets `key` to `value` (None: it loads safely or is refused
    in one line)."""
    (root / ".gitwiki.toml").write_text(render({key: value}, places))
    try:
        cfg = config.load(root, user_file=user_file)
    except GitwikiError as e:
        return None if str(e) and "\n" not in str(e) else f"refused in {str(e).count(chr(10)) + 1} lines"
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    table, field = key.split(".")
    kind, top = trust.TABLE[key], root.resolve()
    record = {"corpus": cfg.corpora[-1], "repository": (cfg.repositories or (None,))[-1]}.get(table) or getattr(
        cfg, table
    )
    got = getattr(record, field, None)
    if table == "repository" and (not cfg.repositories or not cfg.repositories[-1].from_checkout):
        return "a checkout's [[repository]] was not marked as needing consent"
    if kind is trust.USER and got not in (None, "", getattr(_records()[table](), field)):
        return f"a user-only key was taken: {got!r}"
    if kind is trust.INSIDE and isinstance(got, str) and not (top / got).resolve().is_relative_to(top):
        return f"a path outside was taken: {got!r}"
    if not config.index_dir(cfg, root, root / ".git").is_relative_to(top):
        return "the index dir is outside"
    return None


def test_every_key_with_every_hostile_value_loads_safely_or_is_refused_in_one_line(tmp_path, monkeypatch):
    monkeypatch.delenv("GITWIKI_MODEL_PATH")  # the environment is the user's: it would stand in for model_path
    root, places = layout(tmp_path)
    problems = [
        f"{key} = {str(value)[:40]!r}: {problem}"
        for key, value in CASES
        if (problem := load_problem(root, key, value, places, tmp_path / "none.toml"))
    ]
    assert not problems, "\n".join(problems[:30])
    assert {key for key, _ in CASES} == set(trust.TABLE)  # every key, with every hostile value of its type


COMMANDS = [
    ["index", "-q"],
    ["ground", "roll back a release"],
    ["ground", "--corpus", "all", "roll back"],
    ["status"],
    ["lint"],
    ["eval", "--max-questions", "2"],
    ["memory", "search", "roll", "back"],
    ["memory", "topics", "stale"],
    ["index-blocks"],
]


def hook_events(root: Path) -> list[tuple[str, dict[str, Any]]]:
    base = {"session_id": "s1", "cwd": str(root), "transcript_path": str(root / ".t.jsonl")}
    return [
        ("session", {**base, "hook_event_name": "SessionStart", "source": "startup"}),
        ("prompt", {**base, "hook_event_name": "UserPromptSubmit", "prompt": "How do we roll back a release?"}),
        (
            "ambient",
            {
                **base,
                "hook_event_name": "PreToolUse",
                "tool_name": "Read",
                "tool_input": {"file_path": str(root / "wiki/a.md")},
            },
        ),
        (
            "approve-mcp",
            {
                **base,
                "hook_event_name": "PreToolUse",
                "tool_name": "mcp__gitwiki__memory_topics",
                "tool_input": {"action": "refresh"},
            },
        ),
    ]


def run_audited(tmp_path: Path, repo: GitRepoFixture) -> dict[str, Any]:
    audit = tmp_path / "audit"
    audit.mkdir(exist_ok=True)
    for name in ("home", "tmp", "run"):
        (tmp_path / name).mkdir(exist_ok=True)
    plan = {
        "root": str(repo.path),
        "commands": COMMANDS,
        "hooks": hook_events(repo.path),
        "limit": LIMIT,
        "out": str(audit / "report.json"),
    }
    (audit / "plan.json").write_text(json.dumps(plan))
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PYTHONDONTWRITEBYTECODE": "1",
        "HOME": str(tmp_path / "home"),
        "TMPDIR": str(tmp_path / "tmp"),
        "XDG_RUNTIME_DIR": str(tmp_path / "run"),
        "GITWIKI_NO_SERVER": "1",
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    budget = LIMIT * (len(COMMANDS) + 4) + 30
    done = subprocess.run(
        [sys.executable, "-m", "tests.audit_runner", str(audit / "plan.json")],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=budget,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, Any] = json.loads((audit / "report.json").read_text())
    return report


FORBIDDEN = ("/etc/passwd", "/etc/shadow", "/dev/zero", "/dev/random", "/proc/self/environ")


def judge(report: dict[str, Any], tmp_path: Path, toml: str) -> None:
    top = tmp_path.resolve()
    assert any(Path(p).is_relative_to(top / "repo") for _, p, _ in report["touched"])  # the audit saw the run
    own = [top / d for d in ("repo", "xdg", "cache", "home", "tmp", "run", "audit")]
    problems = []
    for kind, path, writes in report["touched"]:
        p = Path(path)
        if p.is_relative_to(top):
            if not any(p.is_relative_to(d) for d in own):
                problems.append(f"{kind} {path}")
        elif path in FORBIDDEN or path.startswith("/etc/ssh") or (writes and path not in ("/dev/null",)):
            problems.append(f"{event} {path} (write={writes})")
    victim = str(top / "victim")
    for argv in report["processes"]:
        if any(victim in a or "/outside" in a for a in argv):
            problems.append(f"exec {argv}")
    problems += [f"connect {n}" for n in report["network"] if "127.0.0.1" not in n and "localhost" not in n]
    for r in report["results"]:
        err = r["err"]
        if r["code"] in (-1, -2) or "Traceback" in err:
            problems.append(f"{r['run']}: {'timeout' if r['code'] == -1 else 'traceback'}: {err[-1500:]}")
        elif r["code"] not in (0, None) and not (r["run"][0] == "lint" and r["code"] == 1):  # lint's 1: findings
            errors = [line for line in err.splitlines() if not line.startswith("gitwiki: warning:")]
            said = [line for line in errors if line.startswith("gitwiki: error")]
            if len(said) != 1 or len(said[0]) > 1000:  # one line, and one a person reads (values in it cut short)
                problems.append(f"{r['run']}: exit {r['code']} without one short error line: {err[:600]!r}")
    assert not problems, f"{toml}\n" + "\n".join(problems[:20])


def hostile_settings() -> st.SearchStrategy[dict[str, Any]]:
    # Half the keys from those gitwiki ignores or holds for consent, so that most files load and every command
    # runs on past loading; the rest from all keys (a hostile path in most of them refuses the file).
    passing = sorted(k for k, v in trust.TABLE.items() if v in (trust.USER, trust.CONSENT))
    keys = st.sampled_from(passing) | st.sampled_from(sorted(trust.TABLE))

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        chosen = draw(st.lists(keys, min_size=1, max_size=3, unique=True))
        # values of the key's type only: a wrong type stops every command at loading (the sweep above has them)
        out = {}
        for key in chosen:
            table, field = key.split(".")
            out[key] = draw(st.sampled_from(_values(typing.get_type_hints(_records()[table])[field], wrong=False)))
        out.setdefault("embeddings.enabled", draw(st.sampled_from([False, False, True])))
        return out

    return build()


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(hostile=hostile_settings())
def test_hostile_checkout_configs_under_audit(tmp_path_factory, hostile):
    tmp_path = tmp_path_factory.mktemp("hostile")
    repo, places = scene(tmp_path)
    toml = render(hostile, places)
    (repo.path / ".gitwiki.toml").write_text(toml)
    report = run_audited(tmp_path, repo)
    event("commands that ran past loading", str(sum(r["code"] == 0 for r in report["results"])))
    judge(report, tmp_path, toml)


@pytest.mark.parametrize(
    "toml",
    [
        '[storage]\nindex_dir = "../victim/.git/gitwiki"\n[eval]\npath = "{outside}/pipe"\n',
        '[eval]\npath = "out/notes.md"\n[index_blocks]\ntemplate = "/etc/passwd"\n',
        '[memory]\nrepository = "{victim}"\ndir = "../../victim"\n[storage]\nuri = "s3://attacker/b"\n',
        '[[repository]]\nname = "kb"\npath = "{victim}"\nmemory = true\n[embeddings]\nmodel_path = "/"\n',
        "[search]\ntop_files = 1000000000000000000000000000000\nlimit = 9223372036854775808\n"
        "depth = 9223372036854775807\nsnippet_chars = 2147483648\n[agent_hooks]\nmax_chars = 10000000000\n",
        # every user-only key at once: all ignored, so every command runs on past loading
        '[storage]\nindex_dir = "{victim}/.git/gitwiki"\nuri = "{victim}"\n[embeddings]\nmodel_path = "{victim}"\n'
        '[memory]\nrepository = "{victim}"\n[[repository]]\nname = "v"\npath = "{victim}"\n',
    ],
    ids=["index-dir-and-fifo", "symlink-and-absolute", "memory-and-uri", "repository-and-model", "huge", "user-only"],
)
def test_the_hand_built_hostile_checkouts_under_audit(tmp_path, toml):
    repo, places = scene(tmp_path)
    text = toml.format(**places)
    (repo.path / ".gitwiki.toml").write_text(text)
    judge(run_audited(tmp_path, repo), tmp_path, text)
