"""The held-out question sets under bench/heldout/ and how bench/wikidev_eval.py reads a set folder.

A held-out set is only a check if it is what its README says: a third of each kind, every label a page
of the set, answers spread over many pages, provenance and licence committed beside the pages.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter

import pytest

from gitwiki.operations.evaluation import Outcome, Question, load_questions, resolve_pages, score
from tests.helpers import ROOT

HELDOUT = ROOT / "bench" / "heldout"
FOLDERS = sorted(p for p in HELDOUT.iterdir() if p.is_dir()) if HELDOUT.is_dir() else []
SETS = [p for p in FOLDERS if (p / "pages").is_dir()]
# A memory recall set keeps no pages: its build.py extracts the notes from the source at a pinned commit.
MEMORY_SETS = [p for p in FOLDERS if not (p / "pages").is_dir()]
KINDS = ("lexical", "paraphrase", "conceptual")
IDENTIFIERS = ROOT / "bench" / "identifiers"
IDENTIFIER_SETS = sorted(p for p in IDENTIFIERS.iterdir() if p.is_dir()) if IDENTIFIERS.is_dir() else []


@pytest.fixture
def wikidev_eval(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    sys.modules.pop("wikidev_eval", None)
    import wikidev_eval

    return wikidev_eval


def test_there_are_two_held_out_sets():
    assert len(SETS) >= 2, [p.name for p in SETS]


@pytest.mark.parametrize("folder", SETS, ids=lambda p: p.name)
def test_a_held_out_set_is_labelled_balanced_and_has_its_provenance(folder, wikidev_eval):
    found = wikidev_eval.wiki_set(folder)
    assert found.corpus == folder.name and len(found.pages) >= 25
    questions = resolve_pages(load_questions(found.questions), [p for p, _ in found.pages], f"{folder.name}/")
    assert len(questions) >= 60
    assert len({q.id for q in questions}) == len(questions)
    kinds = Counter(q.kind for q in questions)
    assert set(kinds) == set(KINDS) and all(kinds[k] >= len(questions) * 0.3 for k in KINDS), kinds
    answers = Counter(path for q in questions for path in q.relevant)
    assert len(answers) >= len(found.pages) // 2 and max(answers.values()) <= 6, answers.most_common(3)
    readme = (folder / "README.md").read_text(encoding="utf-8")
    assert re.search(r"\b[0-9a-f]{40}\b", readme), "the README names the source commit"
    assert all(f"`{k}` ({kinds[k]})" in readme for k in KINDS), "the README's counts per kind are the file's"
    assert (folder / "LICENSE").read_text(encoding="utf-8").strip()


@pytest.mark.parametrize("folder", IDENTIFIER_SETS, ids=lambda p: p.name)
def test_an_identifier_set_asks_for_identifiers_as_written_and_has_its_provenance(folder, wikidev_eval):
    found = wikidev_eval.wiki_set(folder)
    assert found.corpus == folder.name and len(found.pages) >= 25
    questions = resolve_pages(load_questions(found.questions), [p for p, _ in found.pages], f"{folder.name}/")
    assert len(questions) >= 20 and len({q.id for q in questions}) == len(questions)
    # Each question names code as it is written: a dunder, snake_case, a dotted path, a flag, a dashed key,
    # CamelCase or an environment variable.
    code = re.compile(r"__\w+__|\w+_\w+|\w+\.\w+|--\w|\w+-\w+|[a-z][A-Z]|[A-Z][a-z]+[A-Z]")
    assert all(code.search(q.text) for q in questions), [q.text for q in questions if not code.search(q.text)]
    readme = (folder / "README.md").read_text(encoding="utf-8")
    assert re.search(r"sha256\s+`[0-9a-f]{64}`", readme), "the README names the sdist it copied the pages from"
    assert f"{len(questions)} questions" in readme
    assert "MIT" in (folder / "LICENSE").read_text(encoding="utf-8")


def test_the_eval_script_reads_the_held_out_and_the_wiki_dev_layouts(tmp_path, wikidev_eval):
    held = tmp_path / "demo"
    (held / "pages" / "guide").mkdir(parents=True)
    (held / "pages" / "guide" / "a.md").write_text("# A\n", encoding="utf-8")
    (held / "questions.jsonl").write_text(json.dumps({"question": "a?", "relevant": ["guide/a.md"]}) + "\n")
    dev = tmp_path / "wiki-dev"
    (dev / "uv").mkdir(parents=True)
    (dev / "uv" / "b.md").write_text("# B\n", encoding="utf-8")

    assert wikidev_eval.wiki_set(held) == ("demo", [("demo/guide/a.md", "# A\n")], held / "questions.jsonl")
    assert wikidev_eval.wiki_set(dev) == ("uv", [("uv/b.md", "# B\n")], dev / "questions-uv.jsonl")
    with pytest.raises(SystemExit, match="no pages/"):
        wikidev_eval.wiki_set(tmp_path / "empty")


def test_kind_rows_score_each_kind_in_every_mode(wikidev_eval):
    def outcome(kind, rank):
        return Outcome(Question(kind + str(rank), "q", {"a.md": 1}, kind), ("x.md", "a.md")[2 - rank :], rank)

    modes = [score(m, [outcome("lexical", 1), outcome("paraphrase", 2)], 0.0) for m in ("lexical", "dense")]
    rows = {s.label: (s.hit1, s.mrr10) for s in wikidev_eval.kind_scores(modes)}
    assert rows == {
        "lexical/lexical (1)": (1.0, 1.0),
        "lexical/paraphrase (1)": (0.0, 0.5),
        "dense/lexical (1)": (1.0, 1.0),
        "dense/paraphrase (1)": (0.0, 0.5),
    }


def test_there_is_a_memory_recall_set():
    assert MEMORY_SETS, [p.name for p in FOLDERS]


@pytest.mark.parametrize("folder", MEMORY_SETS, ids=lambda p: p.name)
def test_a_memory_recall_set_is_labelled_balanced_and_has_its_provenance(folder):
    questions = [json.loads(line) for line in (folder / "questions.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(questions) >= 60 and len({q["id"] for q in questions}) == len(questions)
    kinds = Counter(q["kind"] for q in questions)
    assert set(kinds) == set(KINDS) and all(kinds[k] >= len(questions) * 0.3 for k in KINDS), kinds
    labels = Counter(label for q in questions for label in q["relevant"])
    assert len(labels) >= len(questions) * 0.9 and all(label.endswith(".md") for label in labels)
    readme = (folder / "README.md").read_text(encoding="utf-8")
    assert re.search(r"\b[0-9a-f]{40}\b", readme), "the README names the source commit"
    assert re.search(r"\b[0-9a-f]{40}\b", (folder / "build.py").read_text(encoding="utf-8")), "build.py pins it"
    assert (folder / "LICENSE").read_text(encoding="utf-8").strip()


@pytest.mark.parametrize("folder", MEMORY_SETS, ids=lambda p: p.name)
def test_a_memory_sets_short_queries_are_short_balanced_and_aim_at_other_notes(folder):
    # queries-short.jsonl: as an agent types a search (the set's README), for notes no question above aims at.
    short = [json.loads(line) for line in (folder / "queries-short.jsonl").read_text(encoding="utf-8").splitlines()]
    asked = {
        label
        for line in (folder / "questions.jsonl").read_text(encoding="utf-8").splitlines()
        for label in json.loads(line)["relevant"]
    }
    assert len(short) >= 30 and len({q["id"] for q in short}) == len(short)
    kinds = Counter(q["kind"] for q in short)
    assert set(kinds) == set(KINDS) and all(kinds[k] >= len(short) * 0.3 for k in KINDS), kinds
    assert all(2 <= len(q["question"].split()) <= 10 for q in short), [q["question"] for q in short]
    labels = [label for q in short for label in q["relevant"]]
    assert len(set(labels)) == len(short) and not set(labels) & asked
    assert "queries-short.jsonl" in (folder / "README.md").read_text(encoding="utf-8")
