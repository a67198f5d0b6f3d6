"""The gitmem exception hierarchy: every error a user can see, with what to do about it."""

from __future__ import annotations

import errno

__all__ = [
    "AmbiguousId",
    "ConfigError",
    "DiskFull",
    "EmptyRepository",
    "FormatVersion",
    "GitmemError",
    "HarnessConfigError",
    "InvalidAnchor",
    "InvalidInput",
    "MalformedRecord",
    "MissingObject",
    "NotARepository",
    "OutsideWorkTree",
    "ReadOnlyRepository",
    "RefConflict",
    "RefLocked",
    "RemoteError",
    "SecretRefused",
    "TokenizerUnavailable",
    "TooLarge",
    "UnknownMemory",
    "UnsafeRepository",
    "UnsupportedRepository",
    "disk_full",
]


class GitmemError(Exception):
    """Base of every error gitmem reports to a user.

    The message is displayed to the user as one line on stderr by the CLI (and
    as a notification by the TUI), so it names the offending value; ``hint``
    says what to do next and is appended after ``" — "``.
    """

    exit_code = 1

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} — {self.hint}" if self.hint else self.message


class InvalidInput(GitmemError):
    """A command-line or API argument is out of range or malformed."""

    exit_code = 2


class OutsideWorkTree(InvalidInput):
    """A path leaves the work tree (``..``, elsewhere, a symbolic link on the way out); nothing is read."""


class NotARepository(GitmemError):
    """The path is not inside a git repository (nor a bare one)."""


class EmptyRepository(GitmemError):
    """The repository has no commits yet, and the operation needs one."""


class UnknownMemory(GitmemError):
    """No memory has this id (or id prefix)."""

    def __init__(self, memory_id: str, hint: str = "run `tur list` to see the ids") -> None:
        super().__init__(f"no memory with id {memory_id!r}", hint)
        self.memory_id = memory_id


class AmbiguousId(GitmemError):
    """An id prefix matches more than one memory."""

    def __init__(self, prefix: str, matches: list[str]) -> None:
        shown = ", ".join(sorted(matches)[:5])
        super().__init__(
            f"id prefix {prefix!r} matches {len(matches)} memories ({shown})",
            "give more characters of the id",
        )
        self.matches = matches


class MalformedRecord(GitmemError):
    """A record blob cannot be parsed or validated; names the blob and the field."""

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(f"malformed record {where}: {reason}")
        self.where = where
        self.reason = reason


class InvalidAnchor(GitmemError):
    """A ``--file path[#Lx-Ly]`` anchor is outside the repository, missing, or out of range."""

    exit_code = 2


class SecretRefused(GitmemError):
    """The content looks like it contains a credential; nothing was stored."""

    exit_code = 2


class TooLarge(GitmemError):
    """What would be stored is larger than its size limit (docs/storage.md); nothing was stored."""

    exit_code = 2


class RefConflict(GitmemError):
    """The memory ref kept moving under us; the change was not committed."""


class RefLocked(GitmemError):
    """``refs/tur/memories.lock`` exists and stayed there through every retry."""


class FormatVersion(GitmemError):
    """The memory ref or a record uses a format this version does not understand."""


class ConfigError(GitmemError):
    """``.tur/config.yaml`` has a bad value; the message names the key."""

    exit_code = 2


class TokenizerUnavailable(GitmemError):
    """The configured tiktoken encoding cannot be loaded without the network."""


class RemoteError(GitmemError):
    """A fetch or push through the user's ``git`` failed, or the remote is unknown."""


class HarnessConfigError(GitmemError):
    """``tur setup`` cannot read or write a harness's settings file (not JSON/TOML, not writable)."""


class UnsafeRepository(GitmemError):
    """Another user owns the repository and git's ``safe.directory`` does not list it."""


class ReadOnlyRepository(GitmemError):
    """A write (a new object, the memory ref) was denied: the repository is not writable."""


class UnsupportedRepository(GitmemError):
    """The repository uses something libgit2 cannot open (SHA-256 object ids, an unknown extension)."""


class MissingObject(GitmemError):
    """A git object is missing: a partial clone could not fetch it, or the repository is damaged."""


class DiskFull(GitmemError):
    """A write failed for want of space: a full disk, a quota, a file-size limit; nothing was stored."""


#: errno values of a write that found no room (a file-size limit, RLIMIT_FSIZE, gives EFBIG).
_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
#: How libgit2, git and SQLite word the same failures when they give text, not an errno.
_FULL_MARKS = ("no space left on device", "disk quota exceeded", "file too large",
               "database or disk is full")


def disk_full(exc: BaseException) -> DiskFull | None:
    """The one-line error for ``exc`` when it is a write that found no room, else ``None``.

    Recognised: an :class:`OSError` whose ``errno`` is ENOSPC, EDQUOT or EFBIG, and any error
    whose text holds what libgit2, git or SQLite say for them ("No space left on device",
    "File too large", "database or disk is full"). The message starts ``no space left on
    device:`` and names the file or the failing step, e.g.
    ``no space left on device: /repo/.git/objects/ab/12... (File too large); nothing was stored``.
    """
    text = str(exc)
    lowered = text.lower()
    if not ((isinstance(exc, OSError) and exc.errno in _FULL_ERRNOS)
            or any(mark in lowered for mark in _FULL_MARKS)):
        return None
    if isinstance(exc, OSError) and exc.errno in _FULL_ERRNOS:
        what = f"{exc.filename} ({exc.strerror})" if exc.filename else (exc.strerror or text)
    else:
        lines = [line.strip() for line in text.splitlines() if any(m in line.lower() for m in _FULL_MARKS)]
        what = (lines[0] if lines else text).removeprefix("fatal: ").removeprefix("error: ")
    return DiskFull(f"no space left on device: {what}; nothing was stored",
                    "free some space (or raise the quota or file-size limit) and run the command again")
