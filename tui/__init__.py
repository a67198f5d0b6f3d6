"""The Textual app of ``tur tui``: browse, curate and preview memories over :class:`gitmem.api.Gitmem`.

Only the public facade (:mod:`gitmem.api`) and :mod:`gitmem.errors` are used.
"""

from __future__ import annotations

from tui.app import GitmemApp, make_app

__all__ = ["GitmemApp", "make_app"]
