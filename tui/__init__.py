"""The Textual app of ``tur tui``: browse, curate and preview memories over :class:`gitmem.api.Gitmem`.

Only the public facade is used (plus ``gm.store.tip()`` to notice ref moves).
"""

from __future__ import annotations

from tui.app import GitmemApp, make_app

__all__ = ["GitmemApp", "make_app"]
