"""The :class:`gitmem.api.Gitmem` methods for sharing memories through a git remote."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gitmem.store import Store
    from gitmem.sync import SyncResult

__all__ = ["SyncMixin"]


class SyncMixin:
    """``setup_remote`` and ``sync`` for :class:`gitmem.api.Gitmem` (which provides ``self.store``)."""

    store: Store

    def setup_remote(self, remote: str = "origin") -> bool:
        """Make a plain ``git fetch`` of ``remote`` also fetch teammates' memories (idempotent).

        Adds the fetch refspec ``+refs/tur/memories:refs/tur/remotes/<remote>/memories``;
        never a push refspec.

        Returns:
            True when the refspec was added, False when it was already configured.

        Raises:
            RemoteError: no such remote, or the git config could not be written.
        """
        from gitmem.sync import setup_remote

        return setup_remote(self.store, remote)

    def sync(self, remote: str = "origin", *, dry_run: bool = False,
             attempts: int = 5) -> SyncResult:
        """Fetch, merge record by record and push the memory ref (see :mod:`gitmem.sync`).

        Args:
            remote: a remote listed by ``git remote``.
            dry_run: report what would be merged and pushed; only the
                remote-tracking ref ``refs/tur/remotes/<remote>/memories`` moves.
            attempts: pushes to try when the remote keeps moving (fetch and merge between).

        Raises:
            RemoteError: unknown or unreachable remote, refused push, or a remote that
                kept moving; never a force push.
            FormatVersion: the remote's ref is not a gitmem memory history.
        """
        from gitmem.sync import sync

        return sync(self.store, remote, dry_run=dry_run, attempts=attempts)
