"""`gitwiki eval --tune`: the replay is the search's own ranking, cross-validation keeps only what holds on held-out
folds, and the CLI writes `[search]` only then, keeping the rest of `.gitwiki.toml` as it was."""

from __future__ import annotations

import hashlib
import json
import random

import pytest

from gitwiki.errors import UsageError
from gitwiki.operations import evaluation, tuning
from gitwiki.wiki import Wiki


class _NoiseEmbedder:
    """A model that knows none of the wiki's words: each text's vector is a hash of it. Dense search is noise, so
    the lexical side should weigh more, and how much more is what --tune has to find."""

    model_id = "noise"
    dim = 16

    def __init__(self, config) -> None:
        pass

    def _vector(self, text: str):
        import numpy as np

        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).normal(size=self.dim)
        return (v / np.linalg.norm(v)).astype(np.float32)

    def embed_documents(self, texts):
        import numpy as np

        return np.stack([self._vector(t) for t in texts])

    def embed_query(self, text):
        return self._vector(text)


@pytest.fixture(autouse=True)
def noise_model(monkeypatch):
    from gitwiki.index import embed

    monkeypatch.setitem(embed.EMBEDDERS, "noise", _NoiseEmbedder)


COMMON = "deploy release service config cluster backup access token queue cache".split()
CONFIG = (
    '# the wiki\'s settings\n[embeddings]\nprovider = "noise"  # hashes, not meaning\n\n[search]\nmode = "hybrid"\n'
)


def code_wiki(repo, seed: int, decoys: bool = True, labels: str = "right") -> None:
    """40 pages, each the one holding its code word (twice); 30 questions ask for a code. With `decoys` each
    question also names a word that only the next page holds, once: lexical search still puts the right page
    first, by a margin that noisy dense scores overturn at the default weight. `labels`: "right", or "random"
    (each question labelled with a page drawn at random: nothing there to learn)."""
    rng = random.Random(seed)
    pages, questions = {}, []
    for i in range(40):
        body = " ".join(rng.choice(COMMON) for _ in range(30))
        more = " ".join(rng.choice(COMMON) for _ in range(40))
        pages[f"wiki/p{i:02d}.md"] = (
            f"# Page {i}\n\nThe zx{i:02d}q unit, zx{i:02d}q again. Also yv{i:02d}k. {body}\n\n## More\n\n{more}\n"
        )
        if i < 30:
            decoy = f" yv{(i + 1) % 40:02d}k" if decoys else ""
            page = f"wiki/p{i:02d}.md" if labels == "right" else f"wiki/p{rng.randrange(40):02d}.md"
            words = " ".join(rng.sample(COMMON, 2 if decoys else 4))
            questions.append({"question": f"zx{i:02d}q{decoy} {words}", "relevant": [page]})
    lines = "".join(json.dumps(q) + "\n" for q in questions)
    repo.commit("wiki", {**pages, ".gitwiki.toml": CONFIG, ".gitwiki/eval.jsonl": lines})


def test_the_replay_ranks_as_the_search_does_under_every_setting(repo):
    code_wiki(repo, seed=2)
    wiki = Wiki.open(repo.path)
    questions = evaluation.resolve_pages(
        evaluation.load_questions(repo.path / ".gitwiki/eval.jsonl"), wiki.view().pages
    )[:12]
    settings = [
        tuning.Setting(0.5, "dbsf", 0.5, 200),  # the defaults
        tuning.Setting(0.8, "minmax", 0.25, 100),
        tuning.Setting(0.2, "dbsf", 0.75, 7),  # fewer chunks than the pages asked for
        tuning.Setting(1.0, "minmax", 0.0, 30),
    ]
    found = tuning.gather(wiki, None, questions, (s.depth for s in settings), evaluation.DEPTH)
    differ = set()
    for setting in settings:
        values = "".join(f"{k} = {json.dumps(v)}\n" for k, v in setting._asdict().items())
        repo.write(".gitwiki.toml", CONFIG + values)
        ranker = evaluation.wiki_ranker(Wiki.open(repo.path))
        for q, candidates in zip(questions, found[setting.depth], strict=True):
            searched = ranker(q.text, "hybrid", None)
            assert tuning.replay(candidates, setting, evaluation.DEPTH) == searched, (setting, q.text)
            differ.add(tuple(searched[:10]))
    assert len(differ) > len(questions)  # the settings do change the order, so the equality means something


def _rr(*columns: list[float]) -> dict[tuning.Setting, list[float]]:
    return {tuning.Setting(0.5 + i / 10, "dbsf", 0.5, 200): list(c) for i, c in enumerate(columns)}


def test_fit_keeps_a_setting_better_on_every_fold_and_not_one_that_is_noise():
    rng = random.Random(3)
    current = [rng.choice((1.0, 0.5, 0.0)) for _ in range(30)]
    better = [min(1.0, r + 0.5) for r in current]
    fit = tuning.fit(_rr(current, better), tuning.Setting(0.5, "dbsf", 0.5, 200))
    assert fit.chosen == tuning.Setting(0.6, "dbsf", 0.5, 200) and fit.wins
    assert fit.tuned_mrr == pytest.approx(sum(better) / 30) and 0 < fit.low <= fit.gain <= fit.high

    # Settings that differ from the current one only by chance: each moves a few questions up or down at random.
    def moved(ranks: list[float]) -> list[float]:
        return [rng.choice((1.0, 0.5, 0.0)) if rng.random() < 0.2 else r for r in ranks]

    noise = {tuning.Setting(w / 10, "dbsf", 0.5, 200): moved(current) for w in range(11)}
    noise[tuning.Setting(0.5, "dbsf", 0.5, 200)] = current
    fit = tuning.fit(noise, tuning.Setting(0.5, "dbsf", 0.5, 200))
    assert fit.chosen != fit.current and fit.chosen_mrr > fit.current_mrr  # chosen on these questions, it looks better
    assert not fit.wins and fit.low <= 0  # held out, it does not


def test_fit_prefers_the_current_setting_on_ties_and_needs_enough_questions():
    same = [1.0, 0.5] * 15
    fit = tuning.fit(_rr(same, same), tuning.Setting(0.6, "dbsf", 0.5, 200))
    assert fit.chosen == fit.current == tuning.Setting(0.6, "dbsf", 0.5, 200) and not fit.wins
    assert fit.gain == 0.0 and fit.low == fit.high == 0.0 and fit.fold_choices == 1
    with pytest.raises(UsageError, match="at least 10 questions"):
        tuning.fit(_rr([1.0] * 9), tuning.Setting(0.5, "dbsf", 0.5, 200))


def test_cli_tune_writes_a_setting_that_wins_on_held_out_folds_and_keeps_the_comments(repo, cli):
    code_wiki(repo, seed=2)
    code, out, err = cli("eval", "--tune", "--dry-run", cwd=repo.path)
    assert code == 0, err
    assert "would write" in out and (repo.path / ".gitwiki.toml").read_text() == CONFIG

    code, out, err = cli("eval", "--tune", "--json", cwd=repo.path)
    assert code == 0, err
    report = json.loads(out)
    assert report["questions"] == 30 and report["settings"] == len(tuning.GRID)
    assert report["current"]["fusion_weight"] == 0.5 and report["chosen"]["fusion_weight"] > 0.5  # lexical weighs more
    assert report["held_out"]["ci95"][0] > 0 and report["wins"] and report["written"]
    text = (repo.path / ".gitwiki.toml").read_text()
    chosen = {k: v for k, v in report["chosen"].items() if k != "mrr@10"}
    assert text.startswith(CONFIG) and text.removeprefix(CONFIG) == "".join(
        f"{k} = {json.dumps(v)}\n" for k, v in chosen.items()
    )
    # What was written is what every search now uses: `gitwiki eval` scores the chosen setting's MRR.
    code, out, err = cli("eval", "--mode", "hybrid", "--json", cwd=repo.path)
    assert json.loads(out)["scores"]["hybrid"]["mrr@10"] == report["chosen"]["mrr@10"]
    # Tuned again, the written setting is the current one: nothing beats it on held-out folds.
    code, out, err = cli("eval", "--tune", cwd=repo.path)
    assert code == 0 and "wrote" not in out, err


@pytest.mark.parametrize(
    "decoys, labels, says",
    [
        (True, "random", "not written: the gain does not hold"),  # labels with nothing to learn
        (False, "right", "the current settings are the best"),  # every setting finds every page first
    ],
)
def test_cli_tune_refuses_settings_that_do_not_generalize(repo, cli, decoys, labels, says):
    code_wiki(repo, seed=2, decoys=decoys, labels=labels)
    before = (repo.path / ".gitwiki.toml").read_bytes()
    code, out, err = cli("eval", "--tune", cwd=repo.path)
    assert code == 0, err
    assert says in out and "wrote" not in out
    assert (repo.path / ".gitwiki.toml").read_bytes() == before


@pytest.mark.parametrize(
    "args, config, says",
    [
        (("--dry-run",), CONFIG, "--dry-run goes with --tune"),
        (("--tune", "--mode", "lexical"), CONFIG, "drop --mode"),
        (("--tune",), CONFIG + 'fusion = "rrf"\n', 'fusion = "rrf"'),
        (("--tune",), "[embeddings]\nenabled = false\n", "the embedding model does not load"),
        (("--tune", "--max-questions", "5"), CONFIG, "at least 10 questions"),
    ],
)
def test_cli_tune_says_what_it_cannot_do(repo, cli, args, config, says):
    code_wiki(repo, seed=2)
    repo.write(".gitwiki.toml", config)
    before = (repo.path / ".gitwiki.toml").read_bytes()
    code, _, err = cli("eval", *args, cwd=repo.path)
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1
    assert (repo.path / ".gitwiki.toml").read_bytes() == before
