"""Symbols from source files in common languages, names an edit removes, key lines of an error."""

from __future__ import annotations

import pytest

from gitwiki.agent_hooks.extract import MAX_SYMBOLS, removed_names, symbols
from gitwiki.agent_hooks.failures import BUILD_COMMAND, error_lines


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "class RotateKeys(Base):\n    def rotate_signing_key(self):\n        pass\nasync def fetch_all():\n",
            ["RotateKeys", "rotate_signing_key", "fetch_all"],
        ),
        (
            "func (s *Server) HandleLogin(w http.ResponseWriter) {\n}\ntype Config struct {\nfunc main() {}\n",
            ["HandleLogin", "Config"],
        ),
        (
            "export function loadPage(a) {}\nexport const renderIndex = (x) => x\nclass Widget extends X {}\ninterface Props {}\n",
            ["loadPage", "renderIndex", "Widget", "Props"],
        ),
        (
            "pub fn parse_header(x: &str) -> u8 {\npub(crate) struct Frame {\nimpl Frame {\nenum Kind {\n",
            ["parse_header", "Frame", "Kind"],
        ),
        (
            "static int compute_checksum(const char *buf, size_t n)\n{\n#define MAX_FRAMES 10\n",
            ["compute_checksum", "MAX_FRAMES"],
        ),
        ("public List<String> listUsers(int id) throws IOException {\n", ["listUsers"]),
        ("build_all() {\nfunction deploy_site {\n", ["build_all", "deploy_site"]),
        ("def __init__(self):\n    pass\nif x:\n    pass\n", []),
    ],
    ids=["python", "go", "typescript", "rust", "c", "java", "shell", "nothing"],
)
def test_symbols(source, expected):
    assert symbols(source) == expected


def test_symbols_read_500_lines_and_keep_20():
    many = "".join(f"def function_{i}():\n    pass\n" for i in range(30))
    assert symbols(many) == [f"function_{i}" for i in range(MAX_SYMBOLS)]
    late = "\n" * 500 + "def too_late():\n"
    assert symbols(late) == []


def test_removed_names_are_definitions_then_code_identifiers():
    old = "def old_name(x):\n    return helperFunc(x) + value\n"
    assert removed_names(old, "def new_name(x):\n    return x\n") == ["old_name", "helperFunc"]


def test_error_lines_keep_the_last_errors_without_paths_and_numbers():
    output = (
        "collected 3 items\n"
        "tests/test_x.py::test_a FAILED\n"
        "E   AssertionError: assert 3 == 4\n"
        "Traceback (most recent call last):\n"
        "error[E0425]: cannot find value `foo` in this scope\n"
    )
    assert error_lines(output) == [
        "error[E0425]: cannot find value `foo` in this scope",
        "E AssertionError: assert ==",
        "test_a FAILED",
    ]


@pytest.mark.parametrize(
    "command", ["python -m pytest -q", "cd app && npm test", "cargo build", "go test ./...", "make"]
)
def test_build_commands(command):
    assert BUILD_COMMAND.search(command)


@pytest.mark.parametrize("command", ["ls -la", "git status", "cat Makefile", "echo cargo-cult"])
def test_other_commands(command):
    assert not BUILD_COMMAND.search(command)
