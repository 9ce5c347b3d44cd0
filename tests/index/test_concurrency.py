"""Readers of the local index and of the LanceDB export while a writer indexes and an exporter exports
(bench/bench_concurrency.py, shortened): no read fails, and once the writers are done no answer is stale."""

from __future__ import annotations

import sys

import pytest

from tests.helpers import ROOT


@pytest.mark.slow  # 4 seconds of mixed load, plus process start-up and the final runs
def test_no_failed_reads_and_no_stale_answers_under_a_mixed_load(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the reader processes and the CLI runs import this checkout
    sys.modules.pop("bench_concurrency", None)
    import bench_concurrency

    result = bench_concurrency.measure(tmp_path, seconds=4, readers=2, pages=40)
    assert result["commits"] >= 1 and result["index_failed"] == 0
    assert result["exports"] >= 2 and result["export_failed"] == 0
    for kind in ("sqlite", "lance"):
        readers = result["readers"][kind]
        assert readers["readers"] == 2 and readers["queries"] > 0
        assert readers["failed"] == 0, readers["errors"]
        assert readers["stale"] == 0, readers["errors"]
