"""The ways a command can end badly, each with its exit code (docs/design.md §6, and 4 for `generate`)."""

from __future__ import annotations


class VoicegateError(Exception):
    """Bad input or a refused action: exit 2, one line on stderr, nothing written."""

    exit_code = 2


class GateFailed(VoicegateError):
    """A FAIL verdict under --strict, or a broken chain in `verify`: exit 1."""

    exit_code = 1


class SeatUnreachable(VoicegateError):
    """The seat or another service could not be reached after retries: exit 3."""

    exit_code = 3


class IntegrityFailed(VoicegateError):
    """`generate` finished, but its own seat-integrity check failed: exit 4 (rows kept, `score` will refuse)."""

    exit_code = 4
