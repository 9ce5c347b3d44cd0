"""`gitwiki eval`: metrics checked against ranx, question files, BEIR folders, the CLI report and gate,
and the project's own docs questions run through the real CLI."""

from __future__ import annotations

import json
import math
import random
import shutil

import pytest

from gitwiki.errors import UsageError
from gitwiki.operations import evaluation
from tests.helpers import ROOT, needs_model

LEXICAL = "[embeddings]\nenabled = false\n"


@pytest.mark.slow  # ranx compiles its metrics with numba on first use (~1 min on a busy 2-core machine)
def test_metrics_match_ranx_on_graded_and_binary_judgments():
    ranx = pytest.importorskip("ranx", reason="needs the eval extra: pip install -e '.[test,eval]'")
    Qrels, Run, ranx_evaluate = ranx.Qrels, ranx.Run, ranx.evaluate

    rng = random.Random(7)
    pages = [f"p{i}.md" for i in range(60)]
    questions, runs = [], {}
    for n in range(40):
        relevant = {p: rng.choice((1, 2, 3, 4)) for p in rng.sample(pages, rng.randint(1, 6))}
        ranked = rng.sample(pages, rng.randint(0, 50))
        questions.append(evaluation.Question(f"q{n}", f"question {n}", relevant))
        runs[f"q{n}"] = ranked
    scored = evaluation.evaluate(lambda text, _m, _f: runs["q" + text.split()[1]], questions, [("hybrid", None)])[0]

    qrels = Qrels({q.id: q.relevant for q in questions})
    run = Run({qid: {p: float(len(r) - i) for i, p in enumerate(r)} for qid, r in runs.items()})
    want = ranx_evaluate(
        qrels, run, ["hit_rate@1", "hit_rate@5", "mrr@10", "ndcg@10", "recall@100"], make_comparable=True
    )
    got = scored.figures()
    for ours, theirs in (("hit@1", "hit_rate@1"), ("hit@5", "hit_rate@5"), ("mrr@10", "mrr@10")):
        assert got[ours] == pytest.approx(float(want[theirs]), abs=1e-4)
    assert scored.ndcg10 == pytest.approx(float(want["ndcg@10"]), abs=1e-9)
    assert scored.recall100 == pytest.approx(float(want["recall@100"]), abs=1e-9)
    assert 0 < scored.ndcg10 < 1  # the random run is neither perfect nor empty


def test_question_file_errors_name_the_line(tmp_path):
    path = tmp_path / "eval.jsonl"
    path.write_text('{"question": "ok", "relevant": ["a.md"]}\n{"question": "", "relevant": ["a.md"]}\n')
    with pytest.raises(UsageError, match=r"eval.jsonl:2: \"question\" must be"):
        evaluation.load_questions(path)
    path.write_text('{"question": "ok", "relevant": []}\n')
    with pytest.raises(UsageError, match=r":1: \"relevant\" must be a list"):
        evaluation.load_questions(path)
    path.write_text("not json\n")
    with pytest.raises(UsageError, match=r":1: not JSON"):
        evaluation.load_questions(path)
    with pytest.raises(UsageError, match="no such question file"):
        evaluation.load_questions(tmp_path / "missing.jsonl")


def test_relevant_paths_resolve_repo_or_corpus_relative_and_unknown_ones_fail():
    qs = [evaluation.Question("a", "x", {"wiki/a.md": 1}), evaluation.Question("b", "y", {"./b.md": 1})]
    resolved = evaluation.resolve_pages(qs, {"wiki/a.md", "wiki/b.md"}, "wiki/")
    assert [q.relevant for q in resolved] == [{"wiki/a.md": 1}, {"wiki/b.md": 1}]
    with pytest.raises(UsageError, match=r"b: gone.md"):
        evaluation.resolve_pages([evaluation.Question("b", "y", {"gone.md": 1})], {"wiki/a.md"}, "wiki/")


@pytest.fixture
def small_wiki(repo):
    repo.write(".gitwiki.toml", '[[corpus]]\nname = "wiki"\npath = "wiki"\n\n' + LEXICAL)
    repo.write("wiki/deploy.md", "# Deploy\n\nShip the release train on Tuesdays.\n\n## Rollback\n\nRevert the tag.\n")
    repo.write("wiki/keys.md", "# Signing keys\n\nRotate the signing key every 90 days with vault.\n")
    repo.write("wiki/oncall.md", "# On-call\n\nThe pager rotation and escalation policy.\n")
    lines = [
        {"question": "how do I rotate the signing key", "relevant": ["wiki/keys.md"]},
        {"question": "revert a release", "relevant": ["deploy.md"], "id": "roll"},  # corpus-relative
        {"question": "who holds the pager rotation tonight", "relevant": ["wiki/keys.md"], "id": "wrong"},
    ]
    repo.write(".gitwiki/eval.jsonl", "".join(json.dumps(q) + "\n" for q in lines))
    repo.commit("wiki")
    return repo


def test_cli_eval_reports_per_mode_with_misses_and_gates(small_wiki, cli):
    code, out, err = cli("eval", "--json", cwd=small_wiki.path)
    assert code == 0, err
    report = json.loads(out)
    assert report["source"] == ".gitwiki/eval.jsonl" and report["questions"] == 3
    assert list(report["scores"]) == ["lexical"] and report["gated"] == "lexical"  # embeddings are off
    ranks = {r["id"]: r["rank"] for r in report["results"]["lexical"]}
    assert ranks["q1"] == 1 and ranks["roll"] == 1
    assert ranks["wrong"] is not None and ranks["wrong"] > 1  # on-call mentions rotation too, and wins
    figures = report["scores"]["lexical"]
    assert figures["hit@1"] == pytest.approx(2 / 3, abs=1e-4)
    assert figures["mrr@10"] == pytest.approx((2 + 1 / ranks["wrong"]) / 3, abs=1e-4)

    code, out, err = cli("eval", cwd=small_wiki.path)
    assert code == 0, err
    assert "3 questions from .gitwiki/eval.jsonl" in out
    assert f"rank {ranks['wrong']}" in out and "wants wiki/keys.md; first was wiki/oncall.md" in out

    code, out, err = cli("eval", "--min-mrr", "0.99", cwd=small_wiki.path)
    assert code == 1 and "below --min-mrr 0.99" in err
    code, _, err = cli("eval", "--min-mrr", "0.5", cwd=small_wiki.path)
    assert code == 0, err


def test_cli_eval_config_path_and_bad_labels(small_wiki, cli):
    small_wiki.write(
        ".gitwiki.toml", '[[corpus]]\nname = "wiki"\npath = "wiki"\n\n[eval]\npath = "q.jsonl"\n' + LEXICAL
    )
    small_wiki.write("q.jsonl", '{"question": "rotate", "relevant": ["wiki/renamed.md"]}\n')
    code, _, err = cli("eval", cwd=small_wiki.path)
    assert code == 2 and "wiki/renamed.md" in err and "fix or drop those labels" in err
    small_wiki.write("q.jsonl", '{"question": "rotate the key", "relevant": ["wiki/keys.md"]}\n')
    code, out, err = cli("eval", "--json", cwd=small_wiki.path)
    assert code == 0, err
    assert json.loads(out)["source"] == "q.jsonl"


def test_cli_eval_beir_folder(tmp_path, cli, monkeypatch):
    folder = tmp_path / "tiny"
    (folder / "qrels").mkdir(parents=True)
    docs = {"d1": ("Boundary layers", "Laminar flow over a flat plate."), "d2": ("Shock waves", "Supersonic shocks.")}
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": k, "title": t, "text": x}) + "\n" for k, (t, x) in docs.items())
    )
    (folder / "queries.jsonl").write_text(
        json.dumps({"_id": "1", "text": "laminar boundary layer"}) + "\n" + json.dumps({"_id": "2", "text": "unjudged"})
    )
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\td1\t2\n1\td2\t1\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    (tmp_path / "xdg" / "gitwiki").mkdir(parents=True)
    (tmp_path / "xdg" / "gitwiki" / "config.toml").write_text(LEXICAL)
    work = tmp_path / "work"
    code, out, err = cli("eval", "--beir", str(folder), "--work", str(work), "--json", cwd=tmp_path)
    assert code == 0, err
    report = json.loads(out)
    assert report["questions"] == 1  # only judged queries
    assert report["results"]["lexical"][0]["top"] == ["wiki/d1.md"]  # d2 shares no word with the query
    figures = report["scores"]["lexical"]
    assert figures["ndcg@10"] == pytest.approx(2 / (2 + 1 / math.log2(3)), abs=1e-4)  # grade 2 found, grade 1 not
    assert figures["recall@100"] == 0.5
    assert (work / "index").is_dir() and (work / "repo" / "wiki" / "d1.md").read_text().startswith("# Boundary")
    code, _, err = cli("eval", "--beir", str(tmp_path / "nope"), cwd=tmp_path)
    assert code == 2 and "not a BEIR folder" in err


@needs_model
@pytest.mark.slow
def test_the_projects_own_docs_questions(repo, cli):
    """CI runs `gitwiki eval` on docs/ with .gitwiki/eval.jsonl: a docs change that hides pages fails here."""
    shutil.copytree(ROOT / "docs", repo.path / "docs")
    shutil.copytree(ROOT / ".gitwiki", repo.path / ".gitwiki")
    shutil.copy(ROOT / ".gitwiki.toml", repo.path / ".gitwiki.toml")
    repo.commit("docs")
    # Measured 2026-11-23 (offline MiniLM, hybrid): MRR@10 0.821; the floor leaves room for wording changes.
    code, out, err = cli("eval", "--mode", "hybrid", "--min-mrr", "0.75", cwd=repo.path)
    assert code == 0, out + err
    assert "22 questions from .gitwiki/eval.jsonl" in out
