# Errors: one root exception, a few kinds, and the exit codes the CLI maps them to.
from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit statuses, shared by every subcommand (diff(1)-like where it matters)."""

    OK = 0
    DIFFERENCES = 1
    NOT_FOUND = 1
    TROUBLE = 2
    INTERRUPTED = 130  # 128 + SIGINT; SIGTERM and SIGHUP give 128 + their number likewise
    BROKEN_PIPE = 141  # 128 + SIGPIPE: what a shell reports for a tool whose reader went away


class ExtractorError(Exception):
    """Root of every error the CLI reports as one `extractor: error: ...` line."""


class RepositoryError(ExtractorError):
    """A repository is missing, unreadable or cannot be cloned or fetched."""


class RevisionError(ExtractorError):
    """A revision does not resolve to a commit."""


class ScopeError(ExtractorError):
    """The requested paths or options select nothing or make no sense."""


class CatalogError(ExtractorError):
    """A catalog on disk is missing, corrupt or of another scope."""


class ReleaseError(ExtractorError):
    """A release cannot be found on, or fetched from, the package index."""


class OutputError(ExtractorError):
    """Standard output cannot take what the command writes (closed, full, failing)."""
