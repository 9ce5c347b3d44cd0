"""Symbols from source files in common languages, names an edit removes."""

from __future__ import annotations

import pytest

from gitwiki.agent_hooks.extract import MAX_LINE, MAX_SYMBOLS, removed_names, symbols


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


def test_no_pattern_crosses_a_line_end():
    """`const x: …` with no `=` on its line once scanned to the next `=` anywhere, so 500 such lines of 4,000
    characters took 15 s; a definition is matched within its own line, on the line's first MAX_LINE characters."""
    lines = [f"const x{i}: " + "a" * 4000 for i in range(500)]
    lines[3] = "const later = () => 1"
    lines[4] = "func (" + "b" * 4000
    assert symbols("\n".join(lines)) == ["later"]
    assert symbols("x" * (MAX_LINE + 10) + "\ndef after_a_long_line():\n") == ["after_a_long_line"]
