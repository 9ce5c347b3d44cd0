"""gitwiki.search.rerank's fastembed loader: a cross-encoder not downloaded does not wait on an unreachable hub."""

from __future__ import annotations

import socket

import pytest

from gitwiki.index import embed
from gitwiki.search import rerank


class NotDownloaded:
    """fastembed's TextCrossEncoder for a model not in its cache: local files only fails, a download would retry."""

    calls: list[dict[str, object]] = []

    def __init__(self, **kwargs: object) -> None:
        NotDownloaded.calls.append(kwargs)
        raise ValueError("could not find model files")


@pytest.fixture
def not_downloaded(monkeypatch):
    from fastembed.rerank import cross_encoder

    NotDownloaded.calls = []
    monkeypatch.setattr(cross_encoder, "TextCrossEncoder", NotDownloaded)
    monkeypatch.setattr(rerank, "_cache", {})
    return NotDownloaded.calls


def test_offline_a_reranker_not_downloaded_is_a_warning_at_once_not_40_s_of_retries(not_downloaded, capsys):
    assert rerank.load_reranker("Xenova/ms-marco-MiniLM-L-6-v2") is None
    assert [c.get("local_files_only") for c in not_downloaded] == [True]  # no download tried
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not downloaded and huggingface.co cannot be reached" in err


def test_hf_hub_offline_makes_no_connection(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError(f"connected to {args}")

    monkeypatch.setattr(socket, "create_connection", refuse)
    for value in ("1", "true", "YES", "on"):
        monkeypatch.setenv("HF_HUB_OFFLINE", value)
        assert embed.hub_reachable() is False
