"""How ``tur setup`` reads, writes and deletes the user's files without harming them.

- **Symbolic links are edited through**: a settings file linked into a dotfiles directory
  keeps its link; the link's target gets the new text. A link whose target does not exist
  is refused and named.
- **Only regular files**: a FIFO, device, socket or directory where a settings file should
  be is refused with one line before anything is opened (a FIFO would block the read), and
  the file is opened with ``O_NONBLOCK`` and checked again, should it be swapped meanwhile.
- **Never a chmod**: a read-only file (no write permission bit, or not writable by this
  user) is refused, not made writable; a file that is replaced keeps its mode.
- **Atomic**: new text goes to a temporary file in the target's directory, renamed over it;
  a file with other hard links is written in place instead, so that every link sees it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from gitmem.errors import HarnessConfigError

__all__ = ["delete", "ensure_writable", "read_exact", "write_atomic"]

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"))
_UNCHANGED = "nothing was changed"


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _named(path: Path) -> str:
    """``path``, and where it leads when it is a symbolic link."""
    if path.is_symlink():
        return f"{path} (a link to {os.path.realpath(path)})"
    return str(path)


def _not_regular(path: Path, mode: int) -> HarnessConfigError:
    return HarnessConfigError(f"{_named(path)} is {_kind(mode)}, not a regular file; {_UNCHANGED}",
                              "put a regular file there (or none), then run tur setup again")


def _stat(path: Path) -> os.stat_result | None:
    """The file's status through links; ``None`` when there is none.

    Raises:
        HarnessConfigError: a link to nothing, or the path cannot be looked at.
    """
    try:
        return os.stat(path)
    except FileNotFoundError:
        if path.is_symlink():
            raise HarnessConfigError(
                f"{path} is a link to {os.readlink(path)}, which does not exist; {_UNCHANGED}",
                "create the file it points to, or remove the link") from None
        return None
    except OSError as exc:
        raise HarnessConfigError(f"cannot read {path}: {exc.strerror or exc}",
                                 "check the file") from None


def read_exact(path: Path) -> str | None:
    """The file's exact text (no newline translation), ``None`` when it does not exist.

    Raises:
        HarnessConfigError: not a regular file (checked before it is opened), a link to
            nothing, or it cannot be read as UTF-8.
    """
    st = _stat(path)
    if st is None:
        return None
    if not stat.S_ISREG(st.st_mode):
        raise _not_regular(path, st.st_mode)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise HarnessConfigError(f"cannot read {path}: {exc.strerror or exc}", "check the file") from None
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):  # swapped between the check and the open
            raise _not_regular(path, opened.st_mode)
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks).decode("utf-8")
    except OSError as exc:
        raise HarnessConfigError(f"cannot read {path}: {exc.strerror or exc}", "check the file") from None
    except UnicodeDecodeError as exc:
        raise HarnessConfigError(f"cannot read {path}: {exc}", "check the file") from None
    finally:
        os.close(fd)


def ensure_writable(path: Path) -> None:
    """Refuse, before anything is written, a file ``tur setup`` could not write as it should.

    Raises:
        HarnessConfigError: a link to nothing, not a regular file, read-only (no write bit,
            or not writable by this user), or its directory cannot be written.
    """
    st = _stat(path)
    real = Path(os.path.realpath(path))
    if st is not None:
        if not stat.S_ISREG(st.st_mode):
            raise _not_regular(path, st.st_mode)
        # The mode bits as well as access(): root may write any file, but a file the user
        # made read-only says they do not want it changed.
        if not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(real, os.W_OK):
            raise HarnessConfigError(f"{_named(path)} is read-only; {_UNCHANGED}",
                                     f"make it writable (chmod u+w {real}), then run tur setup again")
        folder = real.parent
    else:
        folder = real.parent
        while not folder.exists() and folder.parent != folder:
            folder = folder.parent
    if not os.access(folder, os.W_OK | os.X_OK):
        raise HarnessConfigError(f"cannot write in {folder}; {_UNCHANGED}",
                                 "check the directory's permissions")


def write_atomic(path: Path, text: str, exact: bool = False) -> None:
    """Write ``text`` to ``path`` (through a link, to its target), keeping the file's mode.

    ``exact``: no newline translation (the bytes as given).

    Raises:
        HarnessConfigError: it cannot be written.
    """
    real = Path(os.path.realpath(path))
    newline = "" if exact else None
    try:
        st = os.stat(real) if real.exists() else None
        if st is not None and st.st_nlink > 1:  # a rename would cut the other hard links off
            with open(real, "w", encoding="utf-8", newline=newline) as handle:
                handle.write(text)
            return
        real.parent.mkdir(parents=True, exist_ok=True)
        tmp = real.with_name(f".{real.name}.tur-{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8", newline=newline)
        if st is not None:
            os.chmod(tmp, stat.S_IMODE(st.st_mode))
        os.replace(tmp, real)
    except OSError as exc:
        raise HarnessConfigError(f"cannot write {path}: {exc.strerror or exc}",
                                 "check the file's permissions") from None


def delete(path: Path, empty: str) -> None:
    """Delete a settings file left with nothing (already gone is fine).

    A symbolic link is kept and its target gets ``empty`` (``{}`` for JSON): the link is
    the user's, and so is the file it points to.

    Raises:
        HarnessConfigError: it cannot be deleted.
    """
    if path.is_symlink():
        write_atomic(path, empty)
        return
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise HarnessConfigError(f"cannot delete {path}: {exc.strerror or exc}",
                                 "check the file's permissions") from None
