"""Who writes to the memory ref: the local git identity, and the authors of records.

:class:`People` is the part of :class:`~gitmem.store.Store` that reads the repository's
``user.name``/``user.email`` (with ``git config``, remembered across processes), finds who
last changed a record (``git log``), and keeps the writers ``tur sync`` has reported.
"""

from __future__ import annotations

from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING

from gitmem.store.repo import pg

if TYPE_CHECKING:
    import pygit2

    from gitmem.store.lookups import Lookups
    from gitmem.store.repo import Repository

__all__ = ["People"]

_FALLBACK_NAME = "tur"
_FALLBACK_EMAIL = "tur@localhost"


class People:
    """The identity gitmem commits as, and the authors of the records on the memory ref."""

    def __init__(self, repository: Repository, lookups: Lookups) -> None:
        self._repository = repository
        self._lookups = lookups
        self._identity: tuple[str, str] | None = None

    def signature(self) -> pygit2.Signature:
        """The repository's git identity (user.name/user.email), or ``tur <tur@localhost>``."""
        name, email = self._identity_parts()
        return pg().Signature(name, email)

    def identity(self) -> str:
        """See :meth:`gitmem.store.Store.identity`."""
        name, email = self._identity_parts()
        return f"{name} <{email}>"

    def _identity_parts(self) -> tuple[str, str]:
        if self._identity is None:
            # Remembered across processes while the config files are unchanged, so that a
            # warm read starts no git process (and loads no libgit2) for it.
            key = "identity:" + ":".join(str(_mtime_ns(p)) for p in self._config_files())
            found_memo = self._lookups.memo().get(key)
            if isinstance(found_memo, str) and "\n" in found_memo:
                name, _, email = found_memo.partition("\n")
                self._identity = (name, email)
                return self._identity
            found: dict[str, str] = {}
            import subprocess  # lazy: a warm read imports no process machinery

            try:
                proc = subprocess.run(
                    ["git", "--git-dir", str(self._repository.git_dir), "config", "--get-regexp",
                     r"^user\.(name|email)$"],
                    capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL,
                )
                for line in proc.stdout.splitlines():
                    name_key, _, value = line.partition(" ")
                    found[name_key.lower()] = value.strip()  # the last value wins, as in git
            except OSError:  # no git executable: libgit2 reads the same configuration
                config = self._repository.repo.config
                for name_key in ("user.name", "user.email"):
                    if name_key in config:
                        found[name_key] = str(config[name_key])
            self._identity = (found.get("user.name") or _FALLBACK_NAME,
                              found.get("user.email") or _FALLBACK_EMAIL)
            self._lookups.memo().put(key, "\n".join(self._identity))
        return self._identity

    def _config_files(self) -> list[Path]:
        """The git configuration files an identity can come from (repository, global, XDG)."""
        home = Path.home()
        where = self._repository
        return [where.common_dir / "config", where.git_dir / "config", home / ".gitconfig",
                home / ".config" / "git" / "config"]

    def last_authors(self, tip: str, paths: set[str]) -> dict[str, str]:
        """See :meth:`gitmem.store.Store.last_authors`."""
        found: dict[str, str] = {}
        if not paths:
            return found
        import subprocess  # lazy: a warm read imports no process machinery

        proc = subprocess.Popen(
            ["git", "--git-dir", str(self._repository.git_dir), "log", "--no-renames",
             "--format=%x00%an <%ae>", "--name-only", tip, "--", "memories/"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
            text=True, errors="replace",
        )
        assert proc.stdout is not None
        author = ""
        try:
            for line in proc.stdout:
                line = line.rstrip("\n")
                if line.startswith("\0"):
                    author = line[1:]
                elif line in paths and line not in found:
                    found[line] = author
                    if len(found) == len(paths):
                        break
        finally:
            proc.kill()
            proc.communicate()
        return found

    @property
    def _authors_file(self) -> Path:
        return self._repository.common_dir / "tur" / "authors"

    def known_authors(self) -> list[str]:
        """Writers ``tur sync`` has reported as new (``<common dir>/tur/authors``, one a line)."""
        try:
            return [line for line in self._authors_file.read_text().splitlines() if line]
        except (OSError, UnicodeDecodeError):
            return []

    def add_known_authors(self, authors: list[str]) -> None:
        """Remember ``authors`` as seen (see :meth:`known_authors`); best effort."""
        path = self._authors_file
        with suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a", encoding="utf-8") as handle:
                handle.writelines(a.replace("\n", " ") + "\n" for a in authors)


def _mtime_ns(path: Path) -> int:
    """Modification time of ``path`` in nanoseconds, or 0 when it does not exist."""
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0
