"""`gitwiki init --agents`: the AGENTS.md section telling coding agents how to keep the wiki."""

from __future__ import annotations

from gitwiki.pages.conventions import END, START


def test_init_agents_writes_then_replaces_its_section(repo, cli):
    code, out, err = cli("init", "--agents", "--path", "docs", cwd=repo.path)
    assert code == 0, err
    agents = (repo.path / "AGENTS.md").read_text()
    assert agents.startswith(START) and agents.endswith(END + "\n") and "`docs/`" in agents
    assert "kebab-case" in agents and "# Title" in agents and "wrote" in out
    # an existing .gitwiki.toml is kept, an existing AGENTS.md keeps its own text around our section
    (repo.path / "AGENTS.md").write_text("# Agents\n\nRun the tests.\n\n" + agents + "\nMore rules.\n")
    code, out, err = cli("init", "--agents", cwd=repo.path)
    assert code == 0 and "kept" in out, err
    again = (repo.path / "AGENTS.md").read_text()
    assert again.count(START) == 1 and again.startswith("# Agents\n\nRun the tests.\n\n")
    # the kept config's corpus, not a default: AGENTS.md and .gitwiki.toml name the same folder
    assert again.endswith("\nMore rules.\n") and "`docs/`" in again and "`wiki/`" not in again
    assert 'path = "docs"' in (repo.path / ".gitwiki.toml").read_text()
    code, _, err = cli("init", cwd=repo.path)
    assert code == 2 and "--force" in err  # without --agents an existing config is still refused


def test_init_agents_appends_to_an_agents_file_without_a_section(repo, cli):
    (repo.path / "AGENTS.md").write_text("# Agents\nBe brief.")
    code, _, err = cli("config", "init", "--agents", cwd=repo.path)
    assert code == 0, err
    text = (repo.path / "AGENTS.md").read_text()
    assert text.startswith("# Agents\nBe brief.\n\n" + START)
