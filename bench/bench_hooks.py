"""Hook timings on a generated 1,000-page wiki (docs/benchmarks.md, section "Hooks (issue 4)").

Builds the wiki in a temp git repo, stages edits to 5 pages, then times (median of --runs):
- the two hook commands on the 5 files with an empty page-facts cache (`.git/gitwiki/pagefacts.sqlite`
  deleted before each run): the first commit in a fresh clone;
- then, after one untimed run of each that fills the cache as any earlier commit would:
- `pre-commit run` with the gitwiki-lint and gitwiki-index-blocks hooks vs the same two hooks as no-ops
  (`true`), which is pre-commit's own overhead; both as `language: system` so no hook env is built;
- the commands alone: `gitwiki lint` on the 5 files and on all pages, `gitwiki index-blocks` on the 5 files.

Usage: python bench/bench_hooks.py [--pages 1000] [--runs 7]
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


def build(root: Path, n_pages: int) -> list[str]:
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
    subprocess.run([sys.executable, "-m", "gitwiki", "index-blocks"], cwd=root, capture_output=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "wiki"], cwd=root, check=True, env=ENV)
    return paths


def median_ms(cmd: list[str], cwd: Path, runs: int, expect: int | None = 0, setup=lambda: None) -> tuple[float, float]:
    """Median wall time and median CPU time (user + system of the process tree) in ms; `setup` runs
    untimed before each run."""
    walls, cpus = [], []
    for _ in range(runs):
        setup()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
        walls.append((time.perf_counter() - t) * 1000)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)
        if expect is not None and done.returncode != expect:
            raise SystemExit(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stdout}{done.stderr}")
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        paths = build(root, args.pages)
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
        index_dir = root / ".git" / "gitwiki"

        def forget() -> None:  # pagefacts.json: the cache of older versions, so they can be timed too
            for name in ("pagefacts.sqlite", "pagefacts.sqlite-wal", "pagefacts.sqlite-shm", "pagefacts.json"):
                (index_dir / name).unlink(missing_ok=True)

        cold = {
            "gitwiki lint, 5 files, empty page-facts cache": median_ms(
                [*gitwiki, "lint", *staged], root, args.runs, setup=forget
            ),
            "gitwiki index-blocks, 5 files, empty page-facts cache": median_ms(
                [*gitwiki, "index-blocks", *staged], root, args.runs, setup=forget
            ),
        }
        for command in ("lint", "index-blocks"):
            subprocess.run([*gitwiki, command, *staged], cwd=root, capture_output=True)
        rows = {
            **cold,
            "pre-commit run, gitwiki-lint + gitwiki-index-blocks (5 staged)": median_ms(
                [*pre_commit, "hooks.yaml"], root, args.runs
            ),
            "pre-commit run, two no-op hooks (pre-commit's overhead)": median_ms(
                [*pre_commit, "noop.yaml"], root, args.runs
            ),
            "gitwiki lint, 5 files": median_ms([*gitwiki, "lint", *staged], root, args.runs),
            "gitwiki index-blocks, 5 files": median_ms([*gitwiki, "index-blocks", *staged], root, args.runs),
            f"gitwiki lint, all {len(paths)} pages": median_ms([*gitwiki, "lint"], root, args.runs, expect=None),
            "python -m gitwiki --version (interpreter + CLI start)": median_ms(
                [*gitwiki, "--version"], root, args.runs
            ),
        }
        print("| measurement | wall (median) | CPU (median) |\n|---|---|---|")
        for name, (wall, cpu) in rows.items():
            print(f"| {name} | {wall:.0f} ms | {cpu:.0f} ms |")
        ours, base = (
            rows["pre-commit run, gitwiki-lint + gitwiki-index-blocks (5 staged)"],
            rows["pre-commit run, two no-op hooks (pre-commit's overhead)"],
        )
        print(
            f"| gitwiki's share of the pre-commit run (difference) | {ours[0] - base[0]:.0f} ms | "
            f"{ours[1] - base[1]:.0f} ms |"
        )


if __name__ == "__main__":
    main()
