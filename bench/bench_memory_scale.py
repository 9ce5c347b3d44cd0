"""Agent memory at 10,000 entries over 100 topics: a cold CLI `memory search`, warm MCP calls, `memory store`.

The notes are real text: each is one example of a tldr page (/work/shared/eval/tldr, English, CC BY 4.0),
"<command>: <what it does> with `<command line>`" plus the page's summary, written into the topic of its
command family (git, aws, npm, docker, … the 99 largest families, and `misc` for the rest), dated across a
year, some tagged with their platform. The pages are committed and indexed beforehand (hybrid: the offline
MiniLM model; `--lexical`: a repo with embeddings off).

Measured, interleaved with their floors in the same run (each repeat runs every item once, in turn):

  cold     whole-process wall time of `gitwiki memory search WORDS` (a fresh CLI, no server), beside
           `python -c pass` and `gitwiki --version`; min / median of `--rounds`; with `--owner` also the same
           search asked of the checkout's warm owner (a `gitwiki serve` session held open, docs/mcp.md)
  store    a fresh CLI `gitwiki memory store` (a new entry into a random topic), same floors
  warm     one `gitwiki serve` over the MCP SDK's stdio client: memory_search p50 / p95 (2–3 words of a
           note), memory_store (a new entry into one of six topics, 35 to 1,200 entries each), the searches
           after the stores (the first waits for the vectors of the stores not embedded yet), memory_brief of
           one topic, of a glob over a few topics and the meta-briefing; beside them the MCP ping and memory_read
           of one entry, the floors. Each call's CPU time in the server process is read from /proc (its
           utime + stime before and after), a figure the host's load moves far less than wall time.
  import   `gitwiki memory topics import --file` of the 10,000 notes as an export document into a fresh repo
           (hybrid: every entry embedded), wall time and how many progress lines reached stderr (a pipe: one
           line every 5 s) while stdout held the reply alone; beside it `python -c pass` and `gitwiki --version`

    python bench/bench_memory_scale.py [--lexical] [--rounds 10] [--searches 200] [--stores 50] [--briefs 50]
        [--parts cold,warm,import] [--code DIR]

`--code DIR` runs the CLI processes and the server from another gitwiki tree (an older commit, `git archive`d
into DIR) for a before/after comparison in the same minutes. The processes are run with bytecode caching on
(PYTHONDONTWRITEBYTECODE unset), as an installed gitwiki runs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

from benchlib import EVAL, WORK, corpus_config, git, open_wiki, timed_index, use_offline_model, write_repo

from gitwiki.memory.entry import Entry, render_page

TOPICS = 100
ENTRIES = 10_000
NEWEST = datetime(2026, 11, 1, tzinfo=UTC)  # notes of the year before
STOP = frozenset("a an the of to in on for with and or from by into is it its as at be this that all".split())


def tldr_notes() -> list[tuple[str, str, str]]:
    """(family, platform, note text) for every example of the English tldr pages, in path order."""
    out = []
    for page in sorted((EVAL / "tldr" / "pages").glob("*/*.md")):
        lines = page.read_text(encoding="utf-8").splitlines()
        summary = next((line[2:].strip() for line in lines if line.startswith("> ")), "")
        for i, line in enumerate(lines):
            if not line.startswith("- ") or i + 2 >= len(lines):
                continue
            command = lines[i + 2].strip().strip("`").replace("{{", "").replace("}}", "")
            what = re.sub(r"\[(\w+)\]", r"\1", line[2:].strip().rstrip(":"))
            if not command or "`" in command:
                continue
            text = f"{page.stem}: {what} with `{command}`\n\n{summary}"
            out.append((page.stem.split("-")[0], page.parent.name, text))
    return out


def memory_pages(rng: random.Random) -> tuple[list[tuple[str, str]], list[str]]:
    """The topic pages (path, markdown) and the texts of their notes."""
    notes = tldr_notes()
    if not notes:  # a worktree outside the main checkout's parent: the set is not where benchlib looks
        raise SystemExit(f"no tldr pages under {EVAL / 'tldr' / 'pages'}: set GITWIKI_BENCH_SHARED to the shared dir")
    sizes = Counter(family for family, _, _ in notes)
    families = {f for f, _ in sizes.most_common(TOPICS - 1)}
    chosen = [n for n in notes if n[0] in families]
    rest = [n for n in notes if n[0] not in families]
    rng.shuffle(rest)
    chosen += [("misc", p, t) for _, p, t in rest[: ENTRIES - len(chosen)]]
    topics: dict[str, list[Entry]] = defaultdict(list)
    for n, (family, plat, text) in enumerate(chosen[:ENTRIES]):
        name = re.sub(r"[^a-z0-9]+", "-", family.lower()).strip("-") or "misc"
        when = NEWEST - timedelta(days=rng.randrange(365), seconds=rng.randrange(86400))
        stamp = when.strftime("%Y-%m-%dT%H:%M:%SZ")
        tags = () if plat == "common" else (plat,)
        topics[name].append(Entry(name, stamp, text, tags, confidence=0.5 + (n % 6) / 10))
    pages = [(f"wiki/memory/{name}.md", render_page(name, entries)) for name, entries in sorted(topics.items())]
    return pages, [t for _, _, t in chosen[:ENTRIES]]


def queries(texts: list[str], rng: random.Random, n: int) -> list[str]:
    """2–3 content words of a random note's description, as an agent would recall it."""
    out = []
    while len(out) < n:
        words = [w for w in re.findall(r"[a-z]{3,}", rng.choice(texts).split("`")[0].lower()) if w not in STOP]
        if len(words) >= 3:
            out.append(" ".join(rng.sample(words, rng.choice((2, 3)))))
    return out


def build(lexical: bool) -> Path:
    rng = random.Random(1)
    pages, texts = memory_pages(rng)
    wiki_pages = [
        ("wiki/index.md", "# Home\n\nThe project wiki.\n"),
        ("wiki/deploy.md", "# Deploy\n\nWe deploy with argo.\n"),
    ]
    name = "memory-scale-lexical" if lexical else "memory-scale"
    repo = write_repo(WORK / name / "repo", wiki_pages + pages, corpus_config("wiki", "wiki", embeddings=not lexical))
    (WORK / name / "texts.json").write_text(json.dumps(texts))
    wiki = open_wiki(repo, WORK / name / "index")
    reports, seconds = timed_index(wiki)
    wiki.close()
    print(f"index: {reports[0].pages} pages in {seconds:.1f} s (model {reports[0].model})", file=sys.stderr)
    return repo


def child_env(code: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(code or Path(__file__).resolve().parent.parent)
    return env


def run_cmd(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    # Not run from this checkout: `python -m` would import the gitwiki beside it, not the one on PYTHONPATH.
    done = subprocess.run(argv, env=env, cwd=WORK, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(f"{argv} failed ({done.returncode}): {done.stderr}")
    return elapsed * 1000


def owner_session(repo: Path, code: Path | None) -> subprocess.Popen[bytes]:
    """A `gitwiki serve` session held open, once its checkout's owner answers (it starts one if none runs)."""
    from gitwiki.serve import owner

    env = {k: v for k, v in child_env(code).items() if k not in ("GITWIKI_NO_SERVER", "GITWIKI_SERVE_ALONE")}
    session = subprocess.Popen(
        [sys.executable, "-m", "gitwiki", "-C", str(repo), "serve"], env=env, cwd=WORK, stdin=subprocess.PIPE
    )
    where = owner.place(str(repo))
    deadline = time.monotonic() + 120
    while where is None or owner.ask(where, "status") is None:
        if time.monotonic() > deadline:
            raise SystemExit("no gitwiki owner answered in 120 s")
        time.sleep(0.1)
    return session


def stop_owner(repo: Path, session: subprocess.Popen[bytes] | None, code: Path | None) -> None:
    if session is not None:
        session.communicate(b"", timeout=60)
    stop = [sys.executable, "-m", "gitwiki", "-C", str(repo), "serve", "--stop"]
    subprocess.run(stop, env=child_env(code), cwd=WORK, stdout=subprocess.DEVNULL)  # stdout is the report


def cold(repo: Path, texts: list[str], rounds: int, code: Path | None, owned: bool = False) -> dict[str, list[float]]:
    """Interleaved fresh processes: the floors, a search and a store per round (and with `owned`, the search asked
    of the checkout's owner)."""
    env = {**child_env(code), "GITWIKI_NO_SERVER": "1"}
    session = owner_session(repo, code) if owned else None
    to_owner = {k: v for k, v in env.items() if k != "GITWIKI_NO_SERVER"}
    gw = [sys.executable, "-m", "gitwiki", "-C", str(repo)]
    rng = random.Random(5)
    asked = queries(texts, rng, rounds + 1)
    out: dict[str, list[float]] = defaultdict(list)
    run_cmd([*gw, "memory", "search", asked[-1]], env)  # the first search after an index build embeds nothing
    for i in range(rounds):
        out["python -c pass"].append(run_cmd([sys.executable, "-c", "pass"], env))
        out["gitwiki --version"].append(run_cmd([*gw, "--version"], env))
        out["memory search (cold CLI)"].append(run_cmd([*gw, "memory", "search", *asked[i].split()], env))
        if session is not None:
            search = [*gw, "memory", "search", *asked[i].split()]
            out["memory search (CLI, owner up)"].append(run_cmd(search, to_owner))
        topic = f"{rng.choice(['git', 'docker', 'npm', 'misc', 'aws'])}"
        note = f"bench note {i} {rng.random():.6f}: {rng.choice(texts).splitlines()[0]}"
        out["memory store (cold CLI)"].append(run_cmd([*gw, "memory", "store", topic, note, "--force"], env))
    if owned:
        stop_owner(repo, session, code)
    return out


def server_pid(repo: Path | None = None) -> int | None:
    """The process that answers the calls, for its CPU time: the checkout's owner (`serve --owner-fd` with `-C
    repo`) when the session handed itself to one, else the `gitwiki serve` child of this process (the stdio
    client spawned it)."""
    child = None
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if repo is not None and is_owner(stat.parent, cmdline, repo):
            return int(stat.parent.name)
        if int(fields[1]) == os.getpid() and b"serve" in cmdline:
            child = int(stat.parent.name)
    return child


def owner_pid(repo: Path) -> int | None:
    """The checkout's owner, which answers the session's calls when one runs."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if is_owner(cmdline.parent, argv, repo):
            return int(cmdline.parent.name)
    return None


def is_owner(proc: Path, argv: list[bytes], repo: Path) -> bool:
    """Whether the process at `proc` (its command line `argv`) is `repo`'s owner: spawned (`serve --owner-fd`
    with `-C repo`) or forked from the session that started it (that session's `-C repo`, named gitwiki-owner)."""
    if os.fsencode(repo) not in argv:
        return False
    try:
        return b"--owner-fd" in argv or (proc / "comm").read_bytes().strip() == b"gitwiki-owner"
    except OSError:
        return False


_THREAD_NS: dict[str, int] = {}  # the last reading of every thread of the server seen, alive or not


def cpu_ms(pid: int | None) -> float:
    """CPU time of a process so far, every thread's (the SDK runs a tool on a worker thread), ms, from the
    scheduler's nanosecond counters; a thread that has ended counts with its last reading, so the figure
    never goes back (0 when nothing can be read)."""
    if pid is None:
        return 0.0
    for stat in Path(f"/proc/{pid}/task").glob("*/schedstat"):
        try:
            _THREAD_NS[stat.parent.name] = int(stat.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return sum(_THREAD_NS.values()) / 1e6


async def warm(
    repo: Path, texts: list[str], searches: int, stores: int, briefs: int, code: Path | None
) -> dict[str, list[float]]:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "gitwiki", "-C", str(repo), "serve"], env=child_env(code), cwd=WORK
    )
    rng = random.Random(9)
    out: dict[str, list[float]] = defaultdict(list)

    async def timed(label: str, name: str, **arguments: object) -> float:
        before = cpu_ms(pid) + cpu_ms(owner)
        started = time.perf_counter()
        result = await session.call_tool(name, arguments)
        elapsed = (time.perf_counter() - started) * 1000
        if result.is_error:
            raise SystemExit(f"{name} failed: {result.content}")
        if pid is not None and label:
            out[f"server CPU: {label}"].append(cpu_ms(pid) + cpu_ms(owner) - before)
        return elapsed

    # An owner left by an earlier run (kept for [mcp] idle_timeout) runs that run's code: stop it, and this one's after.
    stop_owner(repo, None, code)
    owner = None
    async with stdio_client(params) as streams, ClientSession(*streams) as session:
        await session.initialize()
        pid = None
        for q in queries(texts, rng, 3):
            await timed("", "memory_search", query=q)
        pid = server_pid(repo)  # after a few calls: the owner the session handed itself to is up
        await timed("", "memory_store", topic="tiny", text="the one entry of a small topic, read as a floor")
        owner = owner_pid(repo)  # the server's CPU and the owner's, when the session has one
        for q in queries(texts, rng, searches):
            started = time.perf_counter()
            await session.send_ping()
            out["MCP ping"].append((time.perf_counter() - started) * 1000)
            out["memory_read of one entry"].append(await timed("memory_read", "memory_read", topic="tiny"))
            out["memory_search"].append(await timed("memory_search", "memory_search", query=q))
        for i in range(stores):
            text = f"bench note {i} {rng.random():.6f}: {rng.choice(texts).splitlines()[0]}"
            topic = rng.choice(["git", "docker", "npm", "misc", "aws", "kubectl"])
            out["memory_store"].append(await timed("memory_store", "memory_store", topic=topic, text=text, force=True))
        for n, q in enumerate(queries(texts, rng, 20)):
            took = await timed("", "memory_search", query=q)
            out["memory_search after the stores"].append(took)
            if n == 0:  # it waits for the stores' vectors the server has not embedded yet
                out["memory_search, the first after the stores"].append(took)
        for _ in range(briefs):
            topic = rng.choice(["git", "docker", "npm", "aws", "kubectl", "gh"])
            out["memory_brief of a topic"].append(await timed("brief of a topic", "memory_brief", query=topic))
            glob = rng.choice("gdnp") + "*"
            out["memory_brief of a glob"].append(await timed("brief of a glob", "memory_brief", query=glob))
            out["memory_brief, the meta-briefing"].append(await timed("the meta-briefing", "memory_brief"))
    stop_owner(repo, None, code)
    return {f"{k} (warm MCP)" if not k.startswith(("MCP", "server")) else k: v for k, v in out.items()}


def export_document(repo: Path) -> dict[str, object]:
    """The memory of the built repo as an export document (what `memory topics export` writes)."""
    from gitwiki.memory.entry import parse_page

    topics = []
    for page in sorted((repo / "wiki" / "memory").glob("*.md")):
        entries = parse_page(page.read_text(encoding="utf-8"), page.stem).entries
        topics.append(
            {
                "name": page.stem,
                "entries": [
                    {"created": e.created, "text": e.text, "tags": list(e.tags), "confidence": e.confidence}
                    for e in entries
                ],
            }
        )
    return {"format": "gitwiki-memory", "version": 1, "topics": topics}


def import_run(repo: Path, lexical: bool, code: Path | None) -> tuple[dict[str, list[float]], dict[str, object]]:
    """One import of the 10,000 notes into a fresh repo, beside the process floors."""
    base = repo.parent / "import"
    document = base / "export.json"
    base.mkdir(exist_ok=True)
    document.write_text(json.dumps(export_document(repo)))
    target = base / "repo"
    if target.exists():
        import shutil

        shutil.rmtree(target)
    write_repo(
        target,
        [("wiki/index.md", "# Home\n\nThe project wiki.\n")],
        corpus_config("wiki", "wiki", embeddings=not lexical),
    )
    env = {**child_env(code), "GITWIKI_NO_SERVER": "1", "GITWIKI_INDEX_DIR": str(base / "index")}
    if (base / "index").exists():
        import shutil

        shutil.rmtree(base / "index")
    gw = [sys.executable, "-m", "gitwiki", "-C", str(target)]
    out: dict[str, list[float]] = defaultdict(list)
    out["python -c pass"].append(run_cmd([sys.executable, "-c", "pass"], env))
    out["gitwiki --version"].append(run_cmd([*gw, "--version"], env))
    out["gitwiki index (3 pages, before the import)"].append(run_cmd([*gw, "index"], env))
    started = time.perf_counter()
    done = subprocess.run(
        [*gw, "memory", "topics", "import", "--file", str(document)], env=env, cwd=WORK, capture_output=True, text=True
    )
    out["memory topics import, 10,000 entries"].append((time.perf_counter() - started) * 1000)
    if done.returncode:
        raise SystemExit(f"import failed ({done.returncode}): {done.stderr}")
    progress = [line for line in done.stderr.splitlines() if line.startswith("gitwiki: ")]
    entries = sum(page.read_text().count("\n## 20") for page in (target / "wiki" / "memory").glob("*.md"))
    seen = {
        "progress lines on stderr": len(progress),
        "first and last progress line": [progress[0], progress[-1]] if progress else [],
        "stdout": done.stdout.strip().splitlines()[:2],
        "progress on stdout": any(line.startswith("gitwiki: ") for line in done.stdout.splitlines()),
        "entries in the pages": entries,
    }
    return out, seen


def figures(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "min": round(ordered[0], 1),
        "median": round(statistics.median(ordered), 1),
        "p95": round(ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))], 1),
        "n": len(ordered),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lexical", action="store_true", help="embeddings off: BM25 alone")
    parser.add_argument("--rounds", type=int, default=10, help="cold processes of each kind")
    parser.add_argument("--searches", type=int, default=200)
    parser.add_argument("--stores", type=int, default=50)
    parser.add_argument("--briefs", type=int, default=50)
    parser.add_argument("--parts", default="cold,warm", help="cold, warm, import, comma-separated (default cold,warm)")
    parser.add_argument("--code", type=Path, help="run the CLI and the server from this gitwiki tree")
    parser.add_argument("--owner", action="store_true", help="cold: also the CLI search with the owner up")
    args = parser.parse_args()
    use_offline_model()
    repo = build(args.lexical)
    texts = json.loads((repo.parent / "texts.json").read_text())
    loads = [os.getloadavg()[0]]
    samples: dict[str, list[float]] = {}
    seen: dict[str, object] = {}
    try:
        if "cold" in args.parts:
            samples |= cold(repo, texts, args.rounds, args.code, args.owner)
            loads.append(os.getloadavg()[0])
        if "warm" in args.parts:
            import anyio

            samples |= anyio.run(warm, repo, texts, args.searches, args.stores, args.briefs, args.code)
            loads.append(os.getloadavg()[0])
            stop_owner(repo, None, args.code)  # else the next run's session (another --code) would be its
        if "import" in args.parts:
            timings, seen = import_run(repo, args.lexical, args.code)
            samples |= timings
            loads.append(os.getloadavg()[0])
            stop_owner(repo, None, args.code)  # the session's owner would stay warm for [mcp] idle_timeout
    finally:
        git(repo, "checkout", "-q", "--", ".")  # the repo is reused by the next run: drop the stored entries
        git(repo, "clean", "-fdq")
    summary = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load_1min": [round(x, 2) for x in loads],
        "mode": "lexical" if args.lexical else "hybrid",
        "code": str(args.code or "this tree"),
        "entries": ENTRIES,
        "topics": TOPICS,
        "ms": {name: figures(v) for name, v in samples.items()},
        "import": seen,
    }
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
