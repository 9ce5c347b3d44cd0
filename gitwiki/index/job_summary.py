"""The GitHub job summary the Action writes: what was indexed, what changed, lint, how to pull."""

from __future__ import annotations

from typing import Any, NamedTuple

from gitwiki.index.artifact import Manifest
from gitwiki.pages.templating import environment, shipped_dir

TEMPLATE = "job_summary.md.j2"
LINT_LINES = 30  # a summary is a glance; the full lint output is in the step log


class SummaryInput(NamedTuple):
    manifest: Manifest
    archive_bytes: int
    reports: list[dict[str, Any]]  # `gitwiki index --json` output
    lint_output: str | None  # None: lint did not run
    lint_status: int | None
    publish: str
    ref: str
    seconds: float | None
    eval_report: dict[str, Any] | None = None  # `gitwiki eval --json` output; None: eval did not run


def render(data: SummaryInput) -> str:
    lint_lines = [line for line in (data.lint_output or "").splitlines() if line.strip()]
    return (
        environment((str(shipped_dir()),))
        .get_template(TEMPLATE)
        .render(
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
    )
