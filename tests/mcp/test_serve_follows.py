"""A running `gitwiki serve` answers from the index other processes write: `gitwiki index` rewrites it in
place, `gitwiki pull` replaces the file. With auto_index off the server never catches up by itself, so
only following the file can make a new page appear."""

from __future__ import annotations

import subprocess
import sys

from tests.mcp.client import call, connect, run

CONFIG = "[embeddings]\nenabled = false\n\n[search]\nauto_index = false\n"


def gitwiki(cwd, *args: str) -> None:
    subprocess.run([sys.executable, "-m", "gitwiki", "-C", str(cwd), *args], check=True, capture_output=True)


def found(result) -> list[str]:
    return [d["path"] for d in result.structured_content["docs"]]


def test_the_server_answers_from_an_index_rewritten_or_replaced_by_another_process(repo, tmp_path):
    repo.commit("init", {".gitwiki.toml": CONFIG, "wiki/faq.md": "# FAQ\n\nAsk the platform team.\n"})
    gitwiki(repo.path, "index")

    async def main():
        async with connect(repo.path) as s:
            assert found(await call(s, "ground", query="platform")) == ["wiki/faq.md"]
            repo.commit("garden", {"wiki/garden.md": "# Garden\n\nWater the tomatoes.\n"})
            stale = found(await call(s, "ground", query="tomatoes", mode="lexical"))
            gitwiki(repo.path, "index")  # same file, new state
            rewritten = found(await call(s, "ground", query="tomatoes", mode="lexical"))

            # Another checkout builds and packs an index with one more page; pull installs it as a new file.
            other = tmp_path / "other"
            repo.git("clone", "-q", str(repo.path), str(other))
            (other / "wiki/bees.md").write_text("# Bees\n\nThe hive needs sugar water.\n")
            subprocess.run(["git", "-C", str(other), "add", "-A"], check=True)
            subprocess.run(
                ["git", "-C", str(other), "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "bees"],
                check=True,
            )
            gitwiki(other, "artifact", "pack", "--out", str(tmp_path / "index.tar.gz"))
            repo.git("pull", "-q", str(other), "main")
            before_pull = found(await call(s, "ground", query="hive sugar", mode="lexical"))
            inode = (repo.path / ".git/gitwiki/index.sqlite").stat().st_ino
            gitwiki(repo.path, "pull", "--from", str(tmp_path / "index.tar.gz"))
            assert (repo.path / ".git/gitwiki/index.sqlite").stat().st_ino != inode  # a new file, not a rewrite
            after_pull = found(await call(s, "ground", query="hive sugar", mode="lexical"))
            return stale, rewritten, before_pull, after_pull

    stale, rewritten, before_pull, after_pull = run(main)
    assert stale == []
    assert rewritten == ["wiki/garden.md"]
    assert before_pull == []
    assert after_pull == ["wiki/bees.md"]
