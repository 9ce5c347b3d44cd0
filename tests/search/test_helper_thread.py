"""The helper threads a search hands work to beside the query's embedding (`search.helper_thread`)."""

from __future__ import annotations

import os
import sys

import pytest

from gitwiki.search.helper_thread import helper_thread


def test_one_thread_per_name_made_once():
    bm25 = helper_thread("test-bm25")
    assert helper_thread("test-bm25") is bm25 and helper_thread("test-other") is not bm25
    names = {bm25.submit(lambda: __import__("threading").current_thread().name).result() for _ in range(5)}
    assert len(names) == 1 and names.pop().startswith("test-bm25")


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "darwin", reason="fork")
def test_a_forked_child_makes_its_own_thread_rather_than_wait_for_its_parents():
    parent = helper_thread("test-fork")
    assert parent.submit(lambda: 1).result() == 1
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the parent's thread does not exist here; a new one answers
        try:
            own = helper_thread("test-fork")
            os.write(write, b"ok" if own is not parent and own.submit(lambda: 2).result(timeout=5) == 2 else b"no")
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    assert os.read(read, 2) == b"ok"
