"""Hook timings on a generated wiki (docs/research/hooks.md; the current figures in
docs/benchmarks.md, "Hooks").

Builds the wiki in a temp git repo, stages edits to 5 pages, then times, for this source tree and with
`--against DIR` another one (each with its own index dir), in interleaved rounds beside the floors:
- the two hook commands on the 5 files with an empty page-facts cache (the cache deleted before each
  run): the first commit in a fresh clone;
- then, after one untimed run of each that fills the cache as any earlier commit would:
- `pre-commit run` with the gitwiki-lint and gitwiki-index-blocks hooks vs the same two hooks as no-ops
  (`true`), which is pre-commit's own overhead; both as `language: system` so no hook env is built;
- the commands alone: `gitwiki lint` and `gitwiki index-blocks` on the 5 files, `gitwiki --version`,
  `gitwiki lint` of all pages (a third of the rounds);
- floors: `python -c pass` and `git status --porcelain` on the same repo;
- `pre-commit run` again, with a new edit to the 5 staged pages (titles kept) before each run: what each
  commit meets, where the runs above repeat one staged state; beside the no-op hooks run the same way.
Prints min / median wall and median CPU (user + system of the process tree) per row, and the load average.

Usage: python bench/bench_hooks.py [--pages 1000] [--runs 7] [--against DIR]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "Bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "Bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}
START, END = "<!-- GITWIKI:INDEX-START -->", "<!-- GITWIKI:INDEX-END -->"
NOOP = "floor: pre-commit run, two no-op hooks (pre-commit's overhead)"
FRESH_FLOOR = "floor: the same, the 5 staged pages edited again before each run"


def hooks_config(entries: dict[str, str]) -> str:
    hooks = "".join(
        f"      - id: {hid}\n        name: {hid}\n        entry: {entry}\n        language: system\n"
        "        types: [markdown]\n        require_serial: true\n"
        for hid, entry in entries.items()
    )
    return f"repos:\n  - repo: local\n    hooks:\n{hooks}"


def page(rng: random.Random, title: str, siblings: list[str]) -> str:
    links = " ".join(f"[{s}]({s}.md)" for s in rng.sample(siblings, min(3, len(siblings))))
    body = "\n\n".join(
        f"## Section {i}\n\n"
        + " ".join(rng.choice(("deploy", "service", "cache", "token", "queue", "retry", "schema")) for _ in range(60))
        for i in range(1, 5)
    )
    return f"---\ndescription: About {title}.\n---\n# {title}\n\nSee {links}.\n\n{body}\n\n```sh\nmake {title}\n```\n"


def build(root: Path, n_pages: int, env: dict[str, str]) -> list[str]:
    rng = random.Random(4)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    (root / ".gitwiki.toml").write_text('[[corpus]]\nname = "wiki"\npath = "wiki"\n[embeddings]\nenabled = false\n')
    paths = []
    folders = [f"area{a:02d}/topic{t}" for a in range(20) for t in range(5)]
    per_folder = n_pages // len(folders)
    for folder in folders:
        names = [f"{folder.replace('/', '-')}-page{i:02d}" for i in range(per_folder)]  # unique names, as in most wikis
        for name in names:
            path = f"wiki/{folder}/{name}.md"
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(page(rng, name, [n for n in names if n != name]))
            paths.append(path)
    for index in ["wiki/index.md"] + [f"wiki/area{a:02d}/index.md" for a in range(20)]:
        (root / index).write_text(f"# {Path(index).parent.name.title()}\n\n{START}\n{END}\n")
    (root / ".pre-commit-config.yaml").write_text("repos: []\n")
    subprocess.run([sys.executable, "-m", "gitwiki", "index-blocks"], cwd=root, env=env, capture_output=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "wiki"], cwd=root, check=True, env=ENV)
    return paths


def timed(cmd: list[str], cwd: Path, env: dict[str, str], expect: int | None = 0) -> tuple[float, float]:
    """Wall time and CPU time (user + system of the process tree) of one run, in ms."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    wall = (time.perf_counter() - t) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if expect is not None and done.returncode != expect:
        raise SystemExit(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stdout}{done.stderr}")
    return wall, (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000


def interleaved(jobs: dict[str, tuple], runs: int) -> dict[str, list[tuple[float, float]]]:
    """Each job (name → (cmd, cwd, env, expect, setup)) once per round, `runs` rounds: a host that slows
    down for a while slows every job alike. `setup` runs untimed before each run."""
    out: dict[str, list[tuple[float, float]]] = {name: [] for name in jobs}
    for _ in range(runs):
        for name, (cmd, cwd, env, expect, setup) in jobs.items():
            setup()
            out[name].append(timed(cmd, cwd, env, expect))
    return out


def summary(samples: list[tuple[float, float]]) -> str:
    walls, cpus = sorted(w for w, _ in samples), [c for _, c in samples]
    return f"{walls[0]:.0f} / {statistics.median(walls):.0f} ({statistics.median(cpus):.0f})"


def compiled(source: Path) -> Path:
    """`source` (a checkout holding gitwiki/) with its bytecode written, as `pip install` leaves it: with
    PYTHONDONTWRITEBYTECODE set, a version without it would compile every module on each run."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(source / "gitwiki")], env=env, check=True)
    return source


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument(
        "--against",
        type=Path,
        help="another gitwiki source tree (e.g. `git archive main | tar -x -C DIR`), timed in the same rounds",
    )
    args = ap.parse_args()
    versions = {"this": compiled(Path(__file__).resolve().parent.parent)}
    if args.against:
        versions["against"] = compiled(args.against.resolve())
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "wiki"
        root.mkdir()
        envs = {
            name: {**ENV, "PYTHONPATH": str(source), "GITWIKI_INDEX_DIR": f"{tmp}/index-{name}"}
            for name, source in versions.items()
        }
        paths = build(root, args.pages, envs["this"])
        staged = paths[:: len(paths) // 5][:5]
        for path in staged:  # an edit below the title and first paragraph: index blocks stay current
            with open(root / path, "a") as f:
                f.write("\n## Added today\n\nMore text.\n")
        subprocess.run(["git", "add", *staged], cwd=root, check=True)
        gitwiki = [sys.executable, "-m", "gitwiki"]
        entry = f"{sys.executable} -m gitwiki"
        (root / "hooks.yaml").write_text(
            hooks_config({"gitwiki-lint": f"{entry} lint", "gitwiki-index-blocks": f"{entry} index-blocks"})
        )
        (root / "noop.yaml").write_text(hooks_config({"noop-1": '"true"', "noop-2": '"true"'}))
        pre_commit = [sys.executable, "-m", "pre_commit", "run", "-c"]

        def forget(name: str):  # pagefacts.json: the cache of older versions, so they can be timed too
            def run() -> None:
                for file in ("pagefacts.sqlite", "pagefacts.sqlite-wal", "pagefacts.sqlite-shm", "pagefacts.json"):
                    (Path(tmp) / f"index-{name}" / file).unlink(missing_ok=True)

            return run

        def none() -> None:
            pass

        cold, warm = {}, {}
        for name, env in envs.items():
            cold[f"gitwiki lint, 5 files, empty page-facts cache | {name}"] = (
                [*gitwiki, "lint", *staged],
                root,
                env,
                0,
                forget(name),
            )
            cold[f"gitwiki index-blocks, 5 files, empty page-facts cache | {name}"] = (
                [*gitwiki, "index-blocks", *staged],
                root,
                env,
                0,
                forget(name),
            )
            warm[f"pre-commit run, gitwiki-lint + gitwiki-index-blocks (5 staged) | {name}"] = (
                [*pre_commit, "hooks.yaml"],
                root,
                env,
                0,
                none,
            )
            warm[f"gitwiki lint, 5 files | {name}"] = ([*gitwiki, "lint", *staged], root, env, 0, none)
            warm[f"gitwiki index-blocks, 5 files | {name}"] = ([*gitwiki, "index-blocks", *staged], root, env, 0, none)
            warm[f"python -m gitwiki --version | {name}"] = ([*gitwiki, "--version"], root, env, 0, none)
        floors = {
            NOOP: (
                [*pre_commit, "noop.yaml"],
                root,
                ENV,
                0,
                none,
            ),
            "floor: python -c pass": ([sys.executable, "-c", "pass"], root, ENV, 0, none),
            "floor: git status": (["git", "status", "--porcelain"], root, ENV, 0, none),
        }
        loads = [os.getloadavg()[0]]
        rows = interleaved(cold, args.runs)
        for env in envs.values():  # the untimed runs that fill each cache, as any earlier commit would
            for command in ("lint", "index-blocks"):
                subprocess.run([*gitwiki, command, *staged], cwd=root, env=env, capture_output=True)
        loads.append(os.getloadavg()[0])
        rows.update(interleaved({**warm, **floors}, args.runs))
        loads.append(os.getloadavg()[0])
        edits = iter(range(10**6))

        def edit() -> None:  # what each commit brings: new versions of the staged pages, titles kept
            for path in staged:
                with open(root / path, "a") as f:
                    f.write(f"\nEdit {next(edits)}.\n")
            subprocess.run(["git", "add", *staged], cwd=root, check=True)

        fresh = {
            f"pre-commit run, the 5 staged pages edited again before each run | {name}": (
                [*pre_commit, "hooks.yaml"],
                root,
                env,
                0,
                edit,
            )
            for name, env in envs.items()
        }
        fresh[FRESH_FLOOR] = ([*pre_commit, "noop.yaml"], root, ENV, 0, edit)
        rows.update(interleaved(fresh, args.runs))
        loads.append(os.getloadavg()[0])
        everything = {
            f"gitwiki lint, all {len(paths)} pages | {name}": ([*gitwiki, "lint"], root, env, None, none)
            for name, env in envs.items()
        }
        rows.update(interleaved(everything, max(1, args.runs // 3)))
        loads.append(os.getloadavg()[0])
        print(
            f"{len(paths)} pages, {args.runs} interleaved rounds; load average {' → '.join(f'{x:.2f}' for x in loads)}"
        )
        print("| ms: min / median wall (median CPU) | " + " | ".join(versions) + " |")
        print("|---|" + "---|" * len(versions))
        labels = dict.fromkeys(key.rpartition(" | ")[0] or key for key in rows)
        for label in labels:
            cells = [summary(rows[f"{label} | {n}"]) if f"{label} | {n}" in rows else "" for n in versions]
            if label in rows:
                cells = [summary(rows[label])] + [""] * (len(versions) - 1)
            print(f"| {label} | " + " | ".join(cells) + " |")
        for row, what, floor in (
            ("pre-commit run, gitwiki-lint + gitwiki-index-blocks (5 staged)", "the same staged pages", NOOP),
            ("pre-commit run, the 5 staged pages edited again before each run", "new edits each run", FRESH_FLOOR),
        ):
            noop = rows[floor]
            shares = []
            for name in versions:
                ours = rows[f"{row} | {name}"]
                med = statistics.median(w for w, _ in ours) - statistics.median(w for w, _ in noop)
                low = min(w for w, _ in ours) - min(w for w, _ in noop)
                cpu = statistics.median(c for _, c in ours) - statistics.median(c for _, c in noop)
                shares.append(f"{low:.0f} / {med:.0f} ({cpu:.0f})")
            print(
                f"| **gitwiki's share of the pre-commit run**, {what} (minus the no-op floor) | {' | '.join(shares)} |"
            )


if __name__ == "__main__":
    main()
