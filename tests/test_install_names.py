"""One distribution name, one repository, one install line, one pin story across every doc and template."""

from __future__ import annotations

import re
import subprocess
import tomllib

from tests.helpers import ROOT

REPOSITORY = "gitwiki/gitwiki"  # where the docs send people: pre-commit repo, Action, plugin marketplace, config
SUFFIXES = {".md", ".yml", ".yaml", ".toml", ".py", ".json", ".j2"}


def _texts() -> dict[str, str]:
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    paths = [p for p in listed.splitlines() if p.rsplit(".", 1)[-1] and "." + p.rsplit(".", 1)[-1] in SUFFIXES]
    own = "tests/test_install_names.py"
    return {p: (ROOT / p).read_text(encoding="utf-8") for p in paths if (ROOT / p).is_file() and p != own}


def test_the_distribution_name_is_not_the_one_another_project_holds():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == "gitwiki-search"
    assert "scripts" not in project  # the commands keep their names, as plain scripts (no console-script `re`)
    shared = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert shared["shared-scripts"] == {"scripts/gitwiki": "gitwiki", "scripts/gitwiki-hook": "gitwiki-hook"}


def test_every_doc_names_one_repository_and_pins_nothing_that_does_not_exist():
    tags = subprocess.run(["git", "tag", "-l"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    found = []
    for path, text in _texts().items():
        for match in re.finditer(r"github\.com/([\w.-]+/gitwiki)\b|uses: ([\w.-]+/gitwiki)@(\S+)", text):
            found.append((path, match.group(1) or match.group(2)))
            if match.group(3):
                assert match.group(3) == "main" or match.group(3) in tags, (path, match.group(0))
        for match in re.finditer(r"marketplace add ([\w.-]+/[\w.-]+)", text):  # OWNER/REPO, not a placeholder
            found.append((path, match.group(1)))
        assert not re.search(r"\bOWNER/gitwiki\b", text), path
        for match in re.finditer(r"pipx? install gitwiki\b(?!-)", text):  # another project: only as a warning
            assert re.search(r"another project|unrelated", text[match.end() : match.end() + 80]), (path, match)
        for rev in re.findall(r"^\s*rev: (\S+)", text, re.MULTILINE):
            assert rev in {"main", "{rev}"} | set(tags), (path, rev)
    assert found and {repo for _, repo in found} == {REPOSITORY}, found


def test_the_test_extra_leaves_out_what_only_one_check_needs():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    heavy = {"ranx", "moto", "boto3"}  # scipy, numba, pandas, matplotlib, cfn-lint, sympy come with them
    assert not {re.split(r"[\[<>=]", d)[0] for d in extras["test"]} & heavy
    assert any(d.startswith("ranx") for d in extras["eval"]) and any(d.startswith("moto") for d in extras["s3"])


def test_tests_that_need_a_model_say_how_to_run_them():
    from tests.helpers import needs_model

    assert "GITWIKI_MODEL_PATH" in needs_model.mark.kwargs["reason"]


def test_the_readme_first_screen_says_which_mode_its_example_ran_in():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    intro, _, rest = readme.partition("```console")
    example = rest.partition("```")[0]
    assert "· mode hybrid ·" in example
    assert "Hybrid search, with the embedding model loaded" in intro and "mode lexical (no model: …)" in intro
