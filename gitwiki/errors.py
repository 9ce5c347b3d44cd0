"""The one error type. Every message ends with what the user can do next."""


class GitwikiError(Exception):
    """A user-facing failure; the CLI prints it on one line and exits with `exit_code`."""

    exit_code = 1


class UsageError(GitwikiError):
    """Bad arguments, bad config or bad input (a path outside the wiki, an empty query)."""

    exit_code = 2


class NotFoundError(GitwikiError):
    """Something named does not exist: a repository, a corpus, a page, a revision."""

    exit_code = 3


class UnknownCorpus(NotFoundError, UsageError):
    """A corpus name that is not configured: a bad argument, reported as "not found" (exit 3)."""


class StoreError(GitwikiError):
    """The index cannot be used or written (busy, tampered, built with another model)."""

    exit_code = 4


class EmbeddingUnavailable(GitwikiError):
    """The embedding model cannot be loaded; callers fall back to lexical search."""

    exit_code = 5


class FetchError(GitwikiError):
    """A download failed on the way (host unreachable, timeout, a server error): retrying may help, the
    local index is untouched."""

    exit_code = 6


class RefusedFile(UsageError):
    """A file gitwiki was asked to read because a checkout, a page, a config value or an import named it, and
    which it does not read: not a regular file (a FIFO, a device, a socket, a folder, /proc), outside the
    folders allowed for it (symlinks followed), or larger than the cap for what it holds."""


class MissingObject(StoreError, KeyError):
    """A git object that a ref, the index or a synced repository points at is gone from the object database (an
    interrupted gc, a disk clean-up). A KeyError too, as pygit2 says it, for callers that look an object up."""

    __str__ = Exception.__str__  # the message, not KeyError's repr of it
