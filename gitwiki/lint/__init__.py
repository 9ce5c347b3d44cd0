"""Wiki lints (GW001…): rules in `rules`, the plug-in protocol and registry in `registry`, runs in `runner`."""

from gitwiki.lint import rules as _rules  # noqa: F401  (registers the built-in rules)
from gitwiki.lint.registry import RULES, Finding, Rule
from gitwiki.lint.runner import LintRun, lint_document, lint_repo, lint_text

__all__ = ["RULES", "Finding", "LintRun", "Rule", "lint_document", "lint_repo", "lint_text"]
