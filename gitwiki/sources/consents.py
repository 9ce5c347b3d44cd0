"""The user's consent to a checkout's own `[[repository]]` entries (`gitwiki repo allow`), kept in their config dir:
who may be connected to or read, and the one-line refusal naming the command that allows it."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from gitwiki.config import RepositoryConfig, user_config_path
from gitwiki.errors import UsageError
from gitwiki.fs import atomic_write

CONSENT_FILE = "allowed-repositories.json"  # in the user's config dir, beside the baseline


class ConsentRequired(UsageError):
    """A [[repository]] from the checkout's own .gitwiki.toml that the user has not allowed yet."""


class Consents:
    """The [[repository]] entries of checkouts that the user allowed, kept in their config dir.

    A checkout's `.gitwiki.toml` comes with the clone: its `url` would make gitwiki connect wherever it
    names, its `path` would hand another local repository to the agent. So, as direnv's `allow` or git's
    `safe.directory`, such an entry is used once the user says so (`gitwiki repo allow`), and again only
    after it changes: a consent is keyed to the config file and the entry's url or path. Entries of the
    user's own baseline need none. A consent file that cannot be read allows nothing.
    """

    def __init__(self, path: Path | None = None):
        self.path = path or user_config_path().parent / CONSENT_FILE

    def allowed(self, entry: RepositoryConfig) -> bool:
        if not entry.from_checkout:
            return True
        try:
            return _consent_key(entry) in [_record_key(a) for a in self._read()]  # a list: any JSON compares
        except UsageError:
            return False

    def set(self, entries: list[RepositoryConfig], allow: bool) -> None:
        """Record (or, `allow=False`, withdraw) the consent to each of `entries`, in one locked rewrite."""
        import filelock  # 10–15 ms; only `gitwiki repo allow` writes consents

        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with filelock.FileLock(str(self.path) + ".lock", timeout=10):
                keys = [_consent_key(e) for e in entries]
                kept = [a for a in self._read() if _record_key(a) not in keys]
                added = [_record(e, time.time()) for e in entries] if allow else []
                atomic_write(self.path, json.dumps({"allowed": kept + added}, indent=2) + "\n")
        except filelock.Timeout:
            raise UsageError(f"{self.path} is locked by another `gitwiki repo allow`; try again") from None
        except OSError as e:  # after Timeout, which is one
            raise UsageError(f"cannot write {self.path} ({e.strerror}); make its folder writable") from None

    def _read(self) -> list[dict[str, Any]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as e:
            raise UsageError(f"{self.path} cannot be read ({e}); remove it and allow the repositories again") from None
        allowed = data.get("allowed") if isinstance(data, dict) else None
        if not isinstance(allowed, list) or not all(isinstance(a, dict) for a in allowed):
            raise UsageError(f"{self.path} is not a consent file gitwiki wrote; remove it and allow them again")
        return allowed


_KEY_FIELDS = ("config", "url", "path")


def _consent_key(entry: RepositoryConfig) -> tuple[str | None, ...]:
    return (entry.source, entry.url, entry.path)


def _record(entry: RepositoryConfig, at: float) -> dict[str, Any]:
    return {**dict(zip(_KEY_FIELDS, _consent_key(entry), strict=True)), "name": entry.name, "at": at}


def _record_key(record: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(record.get(k) for k in _KEY_FIELDS)


def consent_message(entry: RepositoryConfig) -> str:
    what = f"url {entry.url}" if entry.url else f"path {entry.path}"
    return (
        f"[[repository]] {entry.name!r} ({what}) is declared in {entry.source}, which came with this checkout; "
        f"gitwiki reaches it only once you allow it: check that address, then run `gitwiki repo allow {entry.name}`"
    )
