"""Sharing memories through a git remote, for the facade: remote set-up and sync."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gitmem.store import Store
    from gitmem.sync import SyncResult

__all__ = ["Sharing"]


class Sharing:
    """``setup_remote`` and ``sync`` over one repository's store.

    Args:
        store: the repository's store.
    """

    def __init__(self, store: Store) -> None:
        self.store = store

    def setup_remote(self, remote: str = "origin") -> bool:
        """Add the memory ref's fetch refspec to ``remote`` (see :meth:`gitmem.api.Gitmem.setup_remote`).

        Raises:
            RemoteError: no such remote, or the git config could not be written.
        """
        from gitmem.sync import setup_remote

        return setup_remote(self.store, remote)

    def sync(self, remote: str = "origin", *, dry_run: bool = False, attempts: int = 5,
             allow_secret: bool = False) -> SyncResult:
        """Fetch, merge record by record and push (see :meth:`gitmem.api.Gitmem.sync`).

        Raises:
            RemoteError: unknown or unreachable remote, refused push, or a remote that kept moving.
            FormatVersion: the remote's ref is not a gitmem memory history.
        """
        from gitmem.sync import sync

        return sync(self.store, remote, dry_run=dry_run, attempts=attempts, allow_secret=allow_secret)
