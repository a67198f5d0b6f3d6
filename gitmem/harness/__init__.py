"""``tur setup <harness>``: wiring gitmem into an agent harness in one idempotent command.

One module per harness (:mod:`.claude`, :mod:`.codex`, :mod:`.cursor`, :mod:`.copilot`,
:mod:`.gemini`) says which files to write and what goes into them, in that harness's
documented format (sources in docs/harness.md); :mod:`.merge` (and :mod:`.markdown` for
instructions files) merges those entries into the user's files, keeping everything it did not
write, and takes exactly them out again; :mod:`.files` reads and writes those files without
harm (through links, regular files only, never a chmod). Never a git hook: only the harness's
own settings, hooks, MCP configuration and instructions files, under the repository's working
tree (``--scope project``) or the user's home (``--scope user``).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.errors import InvalidInput

if TYPE_CHECKING:
    from gitmem.harness.merge import Outcome as SetupItem
    from gitmem.harness.trust import TrustCheck

__all__ = ["ACTIONS", "HARNESSES", "SCOPES", "SetupItem", "SetupReport", "TrustCheck", "run"]

HARNESSES = ("claude", "codex", "cursor", "copilot", "gemini")
"""The harnesses ``tur setup`` knows."""
SCOPES = ("project", "user")
"""``project``: files in the repository's working tree; ``user``: files in the home directory."""
ACTIONS = ("setup", "check", "remove")
"""Write what is missing; report what is wired; take out what ``setup`` wrote."""


def __getattr__(name: str) -> Any:
    # ``SetupItem``, one entry of one file and what happened to it, is
    # :class:`gitmem.harness.merge.Outcome`: imported on first use, because every hook run
    # imports this package (for :mod:`gitmem.harness.hooks`) and none of them merges a file.
    if name == "SetupItem":
        from gitmem.harness.merge import Outcome

        return Outcome
    if name == "TrustCheck":
        from gitmem.harness.trust import TrustCheck

        return TrustCheck
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

_MISSING = frozenset({"missing", "differs"})


@dataclass(frozen=True)
class SetupReport:
    """What ``tur setup`` did (or, with ``check``, found) for one harness.

    Attributes:
        harness: one of :data:`HARNESSES`.
        scope: one of :data:`SCOPES`.
        action: one of :data:`ACTIONS`.
        items: one per entry, in the order the files are listed.
        notes: what could not be wired for this harness, and what was used instead.
        trust: what the harness needs besides the files (its approval or folder trust,
            ``tur`` on PATH), each as found now (:mod:`gitmem.harness.trust`); empty for
            ``remove``.
    """

    harness: str
    scope: str
    action: str
    items: tuple[SetupItem, ...]
    notes: tuple[str, ...] = ()
    trust: tuple[TrustCheck, ...] = ()

    @property
    def next_steps(self) -> list[TrustCheck]:
        """The conditions not met yet: each says the one command or click that fixes it."""
        return [check for check in self.trust if not check.ok]

    @property
    def missing(self) -> list[SetupItem]:
        """The entries a ``check`` found missing or different from what ``setup`` writes."""
        return [item for item in self.items if item.state in _MISSING]

    @property
    def changed(self) -> list[SetupItem]:
        """The entries this run added, updated or removed."""
        return [item for item in self.items if item.state in ("added", "updated", "removed")]


def run(harness: str, scope: str, action: str, root: Path, home: Path,
        journal: Path | None = None) -> SetupReport:
    """Set up, check or remove ``harness``'s wiring.

    Args:
        harness: one of :data:`HARNESSES`.
        scope: ``project`` (files under ``root``) or ``user`` (files under ``home``).
        action: one of :data:`ACTIONS`.
        root: the repository's working tree.
        home: the user's home directory.
        journal: where this clone keeps what each file held before ``setup`` first wrote
            into it (:mod:`gitmem.harness.journal`), so that ``remove`` gives it back
            exactly; ``None``: no journal (``remove`` still takes out exactly its entries).

    Raises:
        InvalidInput: an unknown harness, scope or action.
        HarnessConfigError: a settings file is not JSON/TOML, or cannot be written; no file
            of that harness was changed after it.
    """
    # Here, not at the top: every hook run imports this package, and none of them sets up.
    from gitmem.harness.files import ensure_writable
    from gitmem.harness.journal import Journal, read_exact
    from gitmem.harness.markdown import MarkdownFile
    from gitmem.harness.trust import checks

    if harness not in HARNESSES:
        raise InvalidInput(f"unknown harness {harness!r}", f"use one of {', '.join(HARNESSES)}")
    if scope not in SCOPES:
        raise InvalidInput(f"unknown scope {scope!r}", f"use one of {', '.join(SCOPES)}")
    if action not in ACTIONS:
        raise InvalidInput(f"unknown action {action!r}", f"use one of {', '.join(ACTIONS)}")
    module = importlib.import_module(f"gitmem.harness.{harness}")
    plan = module.plan(scope, root, home)
    if action != "check":
        # Refuse before writing anything: a file that cannot be read (not a regular file, not
        # JSON, a key twice), or one this run would change and cannot write as it should.
        for target in plan.files:
            if _writes(action, target.check(), isinstance(target, MarkdownFile)):
                ensure_writable(target.path)
    items: list[SetupItem] = []
    records = Journal(journal if action != "check" else None)
    for target in plan.files:
        if action == "setup":
            # Only a file holding none of our entries says what the user had; a file set up
            # before the journal existed keeps no record, and its removal prunes as before.
            untouched = all(item.state == "missing" for item in target.check())
            text = read_exact(target.path) if untouched else None
            if isinstance(target, MarkdownFile):
                done = target.apply(records.block(target.path))
                records.wrote_block(target.path, target.block.render())
            else:
                done = target.apply()
            if untouched and any(item.state != "unchanged" for item in done):
                records.record(target.path, text)
            items += done
        elif action == "remove":
            original = records.original(target.path)
            if isinstance(target, MarkdownFile):
                items += target.remove(original, records.block(target.path))
            else:
                items += target.remove(original)
            records.forget(target.path)
        else:
            items += target.check()
    records.save()
    if action == "remove":
        _prune_dirs([t.path for t in plan.files], stop={root, home})
    found = () if action == "remove" else tuple(checks(harness, scope, root, home))
    return SetupReport(harness, scope, action, tuple(items), tuple(plan.notes), found)


def _writes(action: str, found: list[SetupItem], markdown: bool) -> bool:
    """Whether ``setup`` or ``remove`` will write a file whose entries ``check`` found so."""
    if action == "setup":
        return any(item.state != "wired" for item in found)
    # remove takes out a block of any version, but only the entries exactly as written
    return any(item.state == "wired" or (markdown and item.state == "differs") for item in found)


def _prune_dirs(paths: list[Path], stop: set[Path]) -> None:
    """Delete the directories ``setup`` created for files ``remove`` deleted, if left empty."""
    for path in paths:
        parent = path.parent
        while not path.exists() and parent not in stop and parent.parent != parent:
            try:
                parent.rmdir()  # only an empty directory goes
            except OSError:
                break
            path, parent = parent, parent.parent
