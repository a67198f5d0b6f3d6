"""Opening and creating the personal store: a bare repository of gitmem's format (docs/personal.md)."""

from __future__ import annotations

from pathlib import Path

from gitmem.errors import NotARepository
from gitmem.store.memories import Store
from gitmem.store.repo import pg

__all__ = ["create_personal", "open_personal", "set_remote"]


def open_personal(path: Path) -> Store | None:
    """The store at ``path``, or ``None`` when nothing is there (nothing is created).

    ``path`` itself must be the repository: unlike :meth:`Store.discover`, no parent
    directory is searched (a damaged store inside someone's checkout must not be taken for
    that checkout).

    Raises:
        NotARepository: something is at ``path`` but it is not a git repository (damaged).
    """
    if not path.exists():
        return None
    hint = f"move {path} aside; `tur learn --personal` then starts a new one"
    if not (path / "HEAD").is_file() or not (path / "objects").is_dir():
        raise NotARepository(f"the personal store {path} is not a git repository", hint)
    store = Store.discover(path)
    if store.git_dir.resolve() != path.resolve():
        raise NotARepository(f"the personal store {path} is not a git repository", hint)
    return store


def create_personal(path: Path) -> Store:
    """The store at ``path``, created (a bare repository, parents included) when missing.

    Raises:
        NotARepository: something else is at ``path`` (see :func:`open_personal`).
    """
    found = open_personal(path)
    if found is not None:
        return found
    path.parent.mkdir(parents=True, exist_ok=True)
    pg().init_repository(str(path), bare=True)
    return Store.discover(path)


def set_remote(store: Store, url: str, name: str = "origin") -> None:
    """Point the personal store's remote ``name`` at ``url`` (added, or its URL changed).

    Raises:
        RemoteError: git refused (a bad URL or name, an unwritable config).
    """
    from gitmem.errors import RemoteError
    from gitmem.store.remote import Remote, _meaningful_line

    verb = "set-url" if name in Remote.names(store) else "add"
    proc = Remote._git(store, "remote", verb, name, url)
    if proc.returncode != 0:
        raise RemoteError(f"cannot set the personal store's remote {name!r} to {url!r}: "
                          f"{_meaningful_line(proc.stderr)}", "check the URL")
