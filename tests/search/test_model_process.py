"""gitwiki.search.model_process: a new owner's model in a process of its own, which embeds and ranks its first
searches as the owner's own copy would, holds nothing of the owner's, and ends when the owner no longer needs it.

Each case runs in a fresh interpreter (only a process of one thread forks; pytest's may hold threads), which prints
what it saw as JSON."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from tests.helpers import MODEL_DIR, ROOT, needs_model, numbered_page

# Forks the model process for the checkout at argv[1], as an owner's start does, and reports on it.
OWNER = textwrap.dedent(
    """
    import fcntl, json, os, sys, time
    from gitwiki.search.model_process import load_for_owner
    from gitwiki.index import embed

    held = os.open(sys.argv[2], os.O_RDWR | os.O_CREAT)  # as the owner's lock: the child must not keep it
    fcntl.flock(held, fcntl.LOCK_EX)
    load_for_owner(sys.argv[1])
    from gitwiki.wiki import Wiki

    wiki = Wiki.open(sys.argv[1])
    config = wiki.config.embeddings
    lender = embed._lent.get(config)
    report = {"lent": lender is not None}
    if lender is not None:
        lender.ready()
        fds = f"/proc/{lender.pid}/fd"
        report["child_files"] = [os.readlink(os.path.join(fds, fd)) for fd in os.listdir(fds)]
        report["child_stdio"] = [os.readlink(os.path.join(fds, fd)) if fd in os.listdir(fds) else None for fd in "012"]
        report["our_stdout"] = os.readlink("/proc/self/fd/1")
        report["child_name"] = open(f"/proc/{lender.pid}/comm").read().strip()
    ask = lambda: wiki.search(sys.argv[3], mode="hybrid", explain=True).to_json()
    report["lent_answer"] = ask()
    report["heavy_before_own"] = sorted({"numpy", "onnxruntime"} & set(sys.modules))
    report["asked"] = list(lender.embedder().asked) if lender is not None and lender.embedder() else []
    own = embed.own_model(config)
    report["own"] = own is not None and type(own).__name__
    deadline = time.monotonic() + 30  # it ends at its socket's end, reaped on a thread
    while lender is not None and os.path.exists(f"/proc/{lender.pid}") and time.monotonic() < deadline:
        time.sleep(0.02)
    report["child_gone"] = lender is None or not os.path.exists(f"/proc/{lender.pid}")
    try:  # a search that raced the owner's own load: refused, the (reaped) pid never signalled
        lender is not None and lender.ask(b"q", b"late")
        report["late_ask"] = "answered"
    except EOFError:
        report["late_ask"] = "refused"
    report["own_answer"] = ask()
    report["notice"] = embed.lexical_notice(config, wiki.index_dir)
    print(json.dumps(report))
    """
)


def _run_owner(repo: Path, tmp_path: Path, query: str = "walrus number 3") -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", OWNER, str(repo), str(tmp_path / "owner.lock"), query],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def _indexed(repo, cli) -> None:
    repo.commit("pages", {f"wiki/p{i}.md": numbered_page(i, "walrus" if i % 2 else "otter") for i in range(12)})
    assert cli("index", cwd=repo.path)[0] == 0


@needs_model
def test_a_lent_model_ranks_as_the_owners_own_copy_and_the_owner_imports_neither_numpy_nor_the_runtime(
    repo, cli, tmp_path
):
    _indexed(repo, cli)
    report = _run_owner(repo.path, tmp_path)
    assert report["lent"] and report["child_name"] == "gitwiki-model"
    assert report["heavy_before_own"] == []  # the dense half of the first search ran in the model's process
    assert report["asked"] == ["walrus number 3"]  # for the owner's own copy to embed again (operations.warm)
    assert report["own"] == "OnnxEmbedder" and report["child_gone"] and report["late_ask"] == "refused"
    lent, own = report["lent_answer"], report["own_answer"]
    assert lent["mode"] == "hybrid" and lent["docs"], lent
    assert lent == own  # the same pages, chunks, scores and traces, bit for bit
    assert report["notice"] is None


@needs_model
def test_the_model_process_holds_none_of_the_owners_descriptors(repo, cli, tmp_path):
    _indexed(repo, cli)
    report = _run_owner(repo.path, tmp_path)
    # the owner's lock stays the owner's: a dead owner's lock must be free for the next one even while this
    # process lives on
    assert str(tmp_path / "owner.lock") not in report["child_files"]
    assert any(f.startswith("socket:") for f in report["child_files"])
    # nor its stdio: a caller reading a CLI search's output through a pipe would wait for this process's end
    assert report["our_stdout"].startswith("pipe:") and report["child_stdio"] == [os.devnull] * 3


@needs_model
def test_a_damaged_model_leaves_the_first_searches_lexical_and_says_why(repo, cli, tmp_path, monkeypatch):
    """Its files are there, so a process loads it, and fails: the owner's own load fails too, the search is
    lexical, and the notice says why."""
    assert MODEL_DIR is not None
    damaged = tmp_path / "damaged-model"
    damaged.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json", "config.json", "special_tokens_map.json"):
        if (MODEL_DIR / name).is_file():
            shutil.copy(MODEL_DIR / name, damaged / name)
    (damaged / "model.onnx").write_bytes(b"not a model")
    monkeypatch.setenv("GITWIKI_MODEL_PATH", str(damaged))
    repo.commit("pages", {"wiki/a.md": numbered_page(1)})
    assert cli("index", "--lexical", cwd=repo.path)[0] == 0
    report = _run_owner(repo.path, tmp_path, "walrus")
    assert report["lent"]
    assert report["lent_answer"]["mode"] == "lexical" and report["lent_answer"]["docs"]
    assert report["own"] is False and report["child_gone"]
    assert report["notice"] and "does not load" in report["notice"]


def test_a_model_whose_files_are_not_there_is_not_lent(repo, cli, tmp_path, monkeypatch):
    """Known not to load before any search: the owner's own (failing) load says so, as without a process."""
    monkeypatch.setenv("GITWIKI_MODEL_PATH", str(tmp_path / "no-model"))
    repo.commit("pages", {"wiki/a.md": numbered_page(1)})
    assert cli("index", "--lexical", cwd=repo.path)[0] == 0
    report = _run_owner(repo.path, tmp_path, "walrus")
    assert not report["lent"] and report["lent_answer"]["mode"] == "lexical"
    assert report["notice"] and "does not load" in report["notice"]


def test_a_process_with_threads_loads_the_model_on_a_thread_not_in_a_fork(repo, tmp_path):
    """Only a process of one thread may fork and run Python in the child."""
    script = textwrap.dedent(
        """
        import json, sys, threading
        from gitwiki.config import EmbeddingsConfig
        from gitwiki.index import embed
        from gitwiki.search.model_process import ModelProcess

        threading.Thread(target=threading.Event().wait, daemon=True).start()
        wanted = embed.Wanted(EmbeddingsConfig(), __import__("pathlib").Path(sys.argv[1]), (), 200)
        print(json.dumps(ModelProcess.fork(wanted) is None))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) is True


HUNG = textwrap.dedent(
    """
    import json, os, signal, sys, time
    from gitwiki.search import model_process
    from gitwiki.index import embed

    model_process.ASK_TIMEOUT = 1.0
    model_process.load_for_owner(sys.argv[1])
    from gitwiki.wiki import Wiki

    wiki = Wiki.open(sys.argv[1])
    lender = embed._lent[wiki.config.embeddings]
    assert lender.ready()
    os.kill(lender.pid, signal.SIGSTOP)  # hung: alive, answering nothing
    started = time.monotonic()
    answer = wiki.search(sys.argv[2], mode="hybrid").to_json()
    print(json.dumps({
        "seconds": time.monotonic() - started,
        "mode": answer["mode"],
        "docs": [d["path"] for d in answer["docs"]],
        "lent": embed.lent(wiki.config.embeddings),
        "own": type(embed.loaded(wiki.config.embeddings)).__name__,
    }))
    """
)


@needs_model
def test_a_hung_model_process_is_ended_and_the_owner_answers_with_its_own_copy(repo, cli):
    _indexed(repo, cli)
    done = subprocess.run(
        [sys.executable, "-c", HUNG, str(repo.path), "walrus number 3"],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["mode"] == "hybrid" and report["docs"][0] == "wiki/p3.md"
    assert not report["lent"] and report["own"] == "OnnxEmbedder"
    assert report["seconds"] < 30  # the ask's bound, then the owner's own load


# Forks the model process without its read-ahead (a CLI memory search's), names a view ahead ('a', also a damaged
# one), then asks for that view's ranking and for the same ranking from a copy of the model loaded here.
AHEAD = textwrap.dedent(
    """
    import json, sys
    from gitwiki.index import embed
    from gitwiki.search.model_process import load_for_owner
    from gitwiki.wiki import Wiki

    load_for_owner(sys.argv[1], read_ahead=False)
    wiki = Wiki.open(sys.argv[1])
    config = wiki.config.embeddings
    lender = embed._lent[config]
    lent = lender.embedder()
    store = wiki.store
    blobs = [row[0] for row in store.conn.execute("SELECT DISTINCT blob FROM chunks ORDER BY blob")]
    lender.tell(b"a", b"not json")  # a damaged frame: ignored
    lent.read_ahead(str(wiki.index_dir), "view", blobs, 20)  # before its model is ready
    there = lent.rank(str(wiki.index_dir), "view", blobs, "walrus number 3", 5, 20)
    lent.read_ahead(str(wiki.index_dir), "view2", blobs[:3], 20)  # once it is: answered by nothing, ranked next
    there2 = lent.rank(str(wiki.index_dir), "view2", blobs[:3], "walrus number 3", 5, 20)
    own = embed.own_model(config)
    from gitwiki.search.searcher import Searcher

    here = [Searcher(store, depth=20).dense_ranking(k, own.model_id, dict.fromkeys(b, ""), lambda: own.embed_query(
        "walrus number 3"), 5) for k, b in (("view", blobs), ("view2", blobs[:3]))]
    print(json.dumps([there[0], [list(r) for r in here[0][0]], there2[0], [list(r) for r in here[1][0]]]))
    """
)


@needs_model
def test_a_view_named_ahead_is_ranked_there_as_here(repo, cli, tmp_path):
    """`Lent.read_ahead` ('a'): the model's process reads the view's vectors while its model loads, answers nothing
    for it, and ranks it as a copy of the model here does; a damaged frame is ignored."""
    _indexed(repo, cli)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", AHEAD, str(repo.path)], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    there, here, there2, here2 = json.loads(done.stdout)
    assert there and [row[:2] for row in there] == [row[:2] for row in here]
    assert [round(row[2], 5) for row in there] == [round(row[2], 5) for row in here]
    assert there2 and [row[:2] for row in there2] == [row[:2] for row in here2]
