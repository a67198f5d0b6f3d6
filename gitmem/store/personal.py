"""Opening and creating the personal store: a bare repository of gitmem's format (docs/personal.md)."""

from __future__ import annotations

from pathlib import Path

from gitmem.errors import NotARepository
from gitmem.store.memories import Store
from gitmem.store.repo import pg

__all__ = ["create_personal", "open_personal"]


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
