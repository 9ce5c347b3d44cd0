"""The GitHub job summary the Action writes: what was indexed, what changed, lint, how to pull."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import gitwiki
from gitwiki.artifact import Manifest

TEMPLATE = "job_summary.md.j2"
LINT_LINES = 30  # a summary is a glance; the full lint output is in the step log


class SummaryInput(NamedTuple):
    manifest: Manifest
    archive_bytes: int
    reports: list[dict]  # `gitwiki index --json` output
    lint_output: str | None  # None: lint did not run
    lint_status: int | None
    publish: str
    ref: str
    seconds: float | None
    eval_report: dict | None = None  # `gitwiki eval --json` output; None: eval did not run


def template_dirs() -> list[Path]:
    package = Path(gitwiki.__file__).parent
    return [package / "templates", package.parent / "templates"]


def render(data: SummaryInput) -> str:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([str(d) for d in template_dirs()]),
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    lint_lines = [line for line in (data.lint_output or "").splitlines() if line.strip()]
    return env.get_template(TEMPLATE).render(
        m=data.manifest,
        archive_mb=data.archive_bytes / 1e6,
        reports=data.reports,
        changed=sum(r.get("added", 0) + r.get("changed", 0) + r.get("deleted", 0) for r in data.reports),
        embedded=sum(r.get("embedded", 0) for r in data.reports),
        lint_ran=data.lint_output is not None,
        lint_status=data.lint_status,
        lint_lines=lint_lines[:LINT_LINES],
        lint_more=max(0, len(lint_lines) - LINT_LINES),
        publish=data.publish,
        ref=data.ref,
        seconds=data.seconds,
        eval=data.eval_report,
        eval_figures=data.eval_report["scores"].get(data.eval_report["gated"]) if data.eval_report else None,
    )
