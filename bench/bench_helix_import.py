"""`gitwiki memory import --helix` of a generated helix data.log, wall time of the whole command.

The log (helix's documented format, as tests/memory/test_helix.py::Log writes it): ENTRIES entry records over
TOPICS topics, each body a `[source: …]` line, a `[tags: …]` line on 80 % of them and 27 words of text. Each run
imports it into a fresh repo (a 3-page wiki, committed) with `[embeddings] enabled = false` (lexical), so what
is timed is parsing the log, the checks, the topic page writes and the index. In interleaved rounds beside it:
`--dry-run` (parse and every check, nothing written) and `python -c pass`, the floors. `--against DIR` times
another source tree's gitwiki in the same rounds. Prints min / median per row and the load average.

    python bench/bench_helix_import.py [--entries 10000] [--runs 3] [--against DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

from benchlib import ROOT, WORK, corpus_config, write_repo

TOPICS = 50
WORDS = """index writer lock page chunk blob tree commit embedding vector query token cache server client hook
worktree branch merge rebase config corpus search rank fusion lexical dense model thread process latency memory
topic entry checkpoint session brief stale source diff export import schema sqlite wal fsync rename atomic""".split()
TAGS = ("gotcha", "decision", "perf", "build", "invariant", "friction")


def helix_log(entries: int) -> bytes:
    """helix's data.log: `AMRL`, u32 version 1, then entry records (u8 1, u8 topic length, u32 body length,
    i32 minutes since 2024-01-01, 2 pad bytes, topic, body)."""
    rng = random.Random(5)
    data = bytearray(b"AMRL" + struct.pack("<I", 1))
    for n in range(entries):
        topic = f"area-{n % TOPICS:02d}".encode()
        lines = [f"[source: src/mod{n % 97}.rs:{n % 400 + 1}]"]
        if n % 5:
            lines.append(f"[tags: {', '.join(rng.sample(TAGS, 2))}]")
        lines.append(" ".join(rng.choice(WORDS) for _ in range(26)) + f" n{n}")
        body = "\n".join(lines).encode()
        data += struct.pack("<BBIi2x", 1, len(topic), len(body), 60 * n) + topic + body
    return bytes(data)


def fresh_repo(base: Path) -> Path:
    pages = [("wiki/index.md", "# Home\n\nThe project wiki.\n"), ("wiki/deploy.md", "# Deploy\n\nWith argo.\n")]
    template = write_repo(WORK / "helix" / "template", pages, corpus_config("wiki", "wiki", embeddings=False))
    if base.exists():
        shutil.rmtree(base)
    shutil.copytree(template, base, symlinks=True)
    return base


def timed(cmd: list[str], cwd: Path, env: dict[str, str], cpu: list[float] | None = None) -> float:
    """Wall seconds of `cmd`; its CPU seconds (user + system, less noisy on a shared host) go to `cpu`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {done.stderr[-2000:]}")
    if cpu is not None:
        cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return elapsed


def _figures(seconds: list[float]) -> dict[str, float]:
    return {"min_s": round(min(seconds), 2), "median_s": round(statistics.median(seconds), 2), "n": len(seconds)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--against", type=Path, help="another gitwiki source tree, timed in the same rounds")
    args = parser.parse_args()
    log = WORK / "helix" / "data.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_bytes(helix_log(args.entries))
    trees = {"this": ROOT, **({"against": args.against.resolve()} if args.against else {})}
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("GITWIKI_", "PYTHONPATH"))}
    rows: dict[str, list[float]] = {}
    for _ in range(args.runs):
        rows.setdefault("floor: python -c pass", []).append(timed([sys.executable, "-c", "pass"], ROOT, base_env))
        for name, tree in trees.items():
            env = {**base_env, "PYTHONPATH": str(tree), "GITWIKI_INDEX_DIR": str(WORK / "helix" / f"index-{name}")}
            shutil.rmtree(env["GITWIKI_INDEX_DIR"], ignore_errors=True)
            repo = fresh_repo(WORK / "helix" / f"repo-{name}")
            command = [sys.executable, "-m", "gitwiki", "memory", "import", "--helix", str(log)]
            rows.setdefault(f"{name}: --dry-run", []).append(timed([*command, "--dry-run"], repo, env))
            cpu = rows.setdefault(f"{name}: import, CPU", [])
            rows.setdefault(f"{name}: import", []).append(timed(command, repo, env, cpu))
    summary = {
        "entries": args.entries,
        "topics": TOPICS,
        "log_bytes": log.stat().st_size,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        **{k: _figures(v) for k, v in rows.items()},
    }
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
