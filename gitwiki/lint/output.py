"""How findings are printed: `path:line:col: CODE message` for people and editors, JSON for tools,
GitHub workflow commands for Actions annotations."""

from __future__ import annotations

import json

from gitwiki.lint.registry import Finding


def text(findings: list[Finding]) -> str:
    return "".join(f"{f.path}:{f.line}:{f.col}: {f.code} {f.message}\n    fix: {f.hint}\n" for f in findings)


def as_json(findings: list[Finding]) -> str:
    counts = {s: sum(f.severity == s for f in findings) for s in ("error", "warning")}
    return (
        json.dumps(
            {"findings": [f._asdict() for f in findings], "errors": counts["error"], "warnings": counts["warning"]},
            indent=2,
        )
        + "\n"
    )


def github(findings: list[Finding]) -> str:
    def esc(s: str) -> str:
        return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")

    return "".join(
        f"::{f.severity} file={f.path},line={f.line},col={f.col},title={f.code}::{esc(f.message)} (fix: "
        f"{esc(f.hint)})\n"
        for f in findings
    )


FORMATS = {"text": text, "json": as_json, "github": github}
