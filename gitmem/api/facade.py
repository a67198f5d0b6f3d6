"""The :class:`Gitmem` facade: each method delegates to one part of :mod:`gitmem.api`.

Each method's docstring is the contract; the parts' methods point back to it. Import it as
``gitmem.api.Gitmem``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.api.records import Records, Workspace
from gitmem.api.setup import HarnessSetup
from gitmem.api.sharing import Sharing, guard_lost_tip
from gitmem.store import Store
from gitmem.vocabulary import MemoryType, RelationType, Scope

if TYPE_CHECKING:
    from gitmem.api.context import ContextBuilder
    from gitmem.api.curate import Curator
    from gitmem.api.edits import Editor
    from gitmem.api.hooks import Hooks
    from gitmem.api.imports import Importer
    from gitmem.api.injections import InjectionLog
    from gitmem.api.results import (
        AnchoredDiff,
        AnchorStep,
        CacheInfo,
        CommitInfo,
        DoctorReport,
        ImportResult,
        LearnResult,
        RecallResult,
        RepoPaths,
        Skipped,
        StatusView,
        SyncResult,
        TurImportResult,
        VerifyOutcome,
        WakeResult,
    )
    from gitmem.api.verify import Verifier
    from gitmem.api.weights import Weights
    from gitmem.cache.reader import Snapshot
    from gitmem.config import Settings
    from gitmem.context.injection import Via
    from gitmem.context.stale_notes import StaleNote
    from gitmem.context.tokens import TokenCounter
    from gitmem.record.models import Memory
    from gitmem.sharing.trust import Proposal, Version


class Gitmem:
    """A repository's memory store.

    Open with :meth:`open`. Every method that changes memories makes exactly one
    commit on ``refs/tur/memories`` (or none when nothing changed), with
    compare-and-swap, so concurrent processes never lose a write.

    Attributes:
        store: the repository's :class:`gitmem.store.Store` (the only git access); for
            the library and its tests, never used by the surfaces.
        records: the one read path (:class:`~gitmem.api.records.Records`).
        harness: ``tur setup`` (:meth:`~gitmem.api.setup.HarnessSetup.run`): wiring a harness.
    """

    def __init__(self, store: Store, settings: Settings | None = None, cwd: Path | None = None):
        self._ws = Workspace(store, settings, cwd)
        self.store = store
        self.records: Records = self._ws.records
        self._sharing = Sharing(store)
        self.harness = HarnessSetup(store)
        self._ws.personal = lambda: None if (mine := self.personal) is None else mine._context
        # A rewrite of the memory ref that gitmem did not make is merged back on first read.
        store.guard = guard_lost_tip

    # The parts a command does not use are built, and their modules imported, on first use
    # (a write needs neither the weights nor the context builder).

    @cached_property
    def _weights(self) -> Weights:
        from gitmem.api.weights import Weights
        return Weights(self._ws)

    @cached_property
    def _context(self) -> ContextBuilder:
        from gitmem.api.context import ContextBuilder
        return ContextBuilder(self._ws, self._weights)

    @cached_property
    def _verifier(self) -> Verifier:
        from gitmem.api.verify import Verifier
        return Verifier(self._ws, self._weights)

    @cached_property
    def hooks(self) -> Hooks:
        """The harness hooks of ``tur hook ...`` (:class:`~gitmem.api.hooks.Hooks`).

        ``session_start``, ``pre_turn``, ``pre_tool`` and ``stop``, each taking the harness's
        JSON payload; their docstrings are the contract.
        """
        from gitmem.api.hooks import Hooks
        return Hooks(self._ws, self._context, self.injections)

    @cached_property
    def injections(self) -> InjectionLog:
        """The local log of what wake and recall gave agents (:mod:`gitmem.api.injections`)."""
        from gitmem.api.injections import InjectionLog
        return InjectionLog(self._ws)

    @cached_property
    def _curator(self) -> Curator:
        from gitmem.api.curate import Curator
        return Curator(self._ws)

    @cached_property
    def _editor(self) -> Editor:
        from gitmem.api.edits import Editor
        return Editor(self._ws)

    @cached_property
    def _importer(self) -> Importer:
        from gitmem.api.imports import Importer
        return Importer(self._ws)

    @classmethod
    def open(cls, path: str | os.PathLike[str] = ".") -> Gitmem:
        """Open the repository containing ``path``.

        A bad ``.tur/config.yaml`` is reported (``ConfigError``) by the first method that
        needs a setting, not here.

        Raises:
            NotARepository: ``path`` is not inside a git repository.
        """
        store = Store.discover(path)
        cwd = Path(path).resolve()
        top = store.workdir
        if top is not None and not cwd.is_relative_to(top.resolve()):
            # Outside its work tree (GIT_WORK_TREE, core.worktree) git takes paths from the top.
            cwd = top
        return cls(store, cwd=cwd)

    def reopen(self) -> Gitmem:
        """A new handle on the same repository, settings and directory, with nothing cached.

        What a long-running caller (the watcher) takes per batch: nothing read at an older
        HEAD or index survives.
        """
        return Gitmem(Store.discover(self.paths.workdir or self.paths.git_dir),
                      settings=self.settings, cwd=self.cwd)

    # -- the repository ----------------------------------------------------------------------

    @property
    def settings(self) -> Settings:
        """The repository's settings (``.tur/config.yaml``), read on first use.

        Raises:
            ConfigError: the file is invalid.
        """
        return self._ws.settings

    @property
    def cwd(self) -> Path:
        """The directory relative ``--file`` paths start from."""
        return self._ws.cwd

    @property
    def paths(self) -> RepoPaths:
        """Where the working tree and the git directories are."""
        from gitmem.api.results import RepoPaths

        return RepoPaths.of(self.store)

    def tip(self) -> str | None:
        """The memory ref's current commit SHA, or ``None`` before the first memory."""
        return self.store.tip()

    def head(self) -> str | None:
        """HEAD's commit SHA, or ``None`` while HEAD is unborn."""
        return self.store.head_sha()

    def index_entries(self, paths: Iterable[str] | None = None) -> dict[str, str]:
        """Each path in the index (only ``paths`` when given) -> ``"<mode> <blob id> <stage>"``.

        Read by the user's ``git`` (``ls-files --stage``), so split and sparse indexes read
        right; a conflicted path lists its stages joined by ``;``. Two reads differ at a
        path exactly when what is staged there changed (``git add``, ``git restore
        --staged``, a conflict): what the watcher compares to re-check only those paths.
        Empty for a bare repository or when git cannot read the index.
        """
        return self.store.index_entries(paths)

    def identity(self) -> str:
        """``Name <email>`` of the repository's git identity (or the fallback)."""
        return self.store.identity()

    # -- reading -----------------------------------------------------------------------------

    def snapshot(self, tip: str | None = None) -> Snapshot:
        """All records at ``tip`` (default: the current tip of the memory ref)."""
        return self.records.snapshot(tip)

    def memories(self) -> tuple[list[Memory], list[Skipped]]:
        """Every readable record (sorted by id) and the skipped malformed blobs."""
        return self.records.memories()

    def get(self, token: str) -> Memory:
        """Return the memory with this id or unique id prefix.

        An old id of an imported memory (``legacy_id``), or a unique prefix of one, names
        it too; ids are tried first.

        Raises:
            UnknownMemory: no such id.
            AmbiguousId: the prefix matches several ids.
            MalformedRecord: the record exists but cannot be read.
        """
        return self.records.get(token)

    def resolve(self, token: str) -> str:
        """The full id that ``token`` (an id, a legacy id, or a unique prefix) names; nothing is parsed.

        Raises:
            UnknownMemory, AmbiguousId: bad id.
        """
        return self.records.resolve(token)

    def id_choices(self, prefix: str = "", limit: int = 200, status: str | None = None) -> dict[str, str]:
        """Ids that ``prefix`` may name -> the first line of each one's content (at most 60 characters).

        What shell completion offers (``tur show fact-<TAB>``, ``tur show 12cc<TAB>``): ids
        whose id or hex part starts with ``prefix``, else the current ids of memories whose
        old id (``legacy_id``) does; with ``status`` (e.g. ``"refuted"``, for ``tur refute
        --undo``) only memories stored with that status. Read from the read cache's table,
        no record parsed; at most ``limit`` ids, in id order.
        """
        return self.records.id_choices(prefix, limit, status)

    def legacy_ids(self) -> dict[str, tuple[str, ...]]:
        """Each imported memory's id -> the ids it had before ``tur import`` (``legacy_id``).

        Read from the read cache's table (warm: one file); memories without one are left out.
        """
        return self.records.legacy_ids()

    def history(self, memory_id: str) -> list[CommitInfo]:
        """Commits on the memory ref that changed this record, newest first."""
        return self.records.history(memory_id)

    def verification_point(self, memory_id: str) -> tuple[str | None, datetime | None]:
        """The memory's effective verification point: ``(commit SHA, time)`` its decay counts from.

        Its own ``(provenance.git_sha, last_verified_at)``, or those of the newest whole ``tur verify`` run
        that found its anchored code unchanged, whichever is newer (:mod:`gitmem.api.runs`): what its weight
        and commit distance use everywhere.

        Raises:
            UnknownMemory, AmbiguousId: ``memory_id`` names no single memory.
        """
        return self._verifier.verification_point(memory_id)

    def anchor_trail(self, memory_id: str, history: list[CommitInfo] | None = None) -> list[AnchorStep]:
        """How the memory's anchor travelled through the code, oldest first.

        The first step is where it was learned; then one step per recorded change of its anchor:
        ``renamed``, ``moved`` (to another file) or ``reformatted`` as verify found them, with the code
        commits its reason names, else ``shifted`` (other lines of the same file), ``re-anchored`` or
        ``re-learned``. Read from the record's commits on the memory ref (``history``, as :meth:`history`
        returns them, if the caller has them already). Nothing is written.

        Raises:
            UnknownMemory, AmbiguousId: bad id.
        """
        return self._verifier.anchor_trail(memory_id, history)

    def record_text(self, memory_id: str) -> str:
        """The record exactly as stored on the ref (YAML text).

        Raises:
            UnknownMemory, AmbiguousId: bad id.
        """
        return self.records.record_text(memory_id)

    def anchored_paths(self) -> dict[str, tuple[str, ...]]:
        """Map each anchored file (repository-relative POSIX path) to the ids anchored to it.

        Refuted memories are left out (verify never changes them); stale ones are kept,
        since reverting their code makes them fresh again. Paths and ids are sorted; an
        anchor that does not parse is left out.
        """
        return self._context.anchored_paths()

    def anchored_diff(self, memory: Memory, max_lines: int = 400) -> AnchoredDiff:
        """The anchored file's diff from the observed commit to the working tree (read-only).

        Args:
            memory: the record; its ``provenance.git_sha`` and anchored path are used.
            max_lines: lines of diff kept (a huge rewrite is cut, and the note says so).

        Returns:
            The diff; without an anchor, or when git fails, an empty one whose ``note``
            says why (never raises for git trouble).
        """
        return self._context.anchored_diff(memory, max_lines)

    # -- writing -----------------------------------------------------------------------------

    def learn(
        self,
        content: str,
        *,
        type: MemoryType | str = MemoryType.FACT,
        file: str | None = None,
        confidence: float | None = None,
        agent: str | None = None, harness: str | None = None,
        scope: Scope | str = Scope.UNIVERSAL,
        allow_secret: bool = False,
        now: datetime | None = None,
        supersedes: str | None = None, visibility: Iterable[str] | None = None,
    ) -> LearnResult:
        """Store a memory observed at HEAD, or re-verify the same content if already stored.

        Args:
            content: the statement; de-duplicated on its normalised form.
            type: axiom | core | fact | insight | preference.
            file: anchor ``path`` or ``path#Lstart-Lend``, relative to the current directory.
            confidence: in [0, 1]; default 1.0 for a new memory, unchanged for a known one.
            agent: source agent name.
            harness: source harness name.
            scope: universal | incarnation.
            allow_secret: store content even if it looks like a credential.
            now: observation time (UTC); default the current time.
            supersedes: id (or unique prefix) of a memory this one replaces; the relation is
                added in the same commit.
            visibility: the agents the memory is for (``None``: everyone, or unchanged if known).

        Returns:
            The record, whether it is new, the commit, the ids (and statements) of memories
            that may say the same thing (same anchored lines, or a near-duplicate statement);
            :meth:`~gitmem.api.results.LearnResult.notes` words what to tell the user.

        The id is ``<type>-<8 hex>`` of the normalised content's SHA-256; when a stored
        memory of a *different* statement already has it, the new memory gets 16 hex
        digits (``result.collided_with`` names the other), so no statement is ever taken
        for another (docs/storage.md, Ids).

        Raises:
            InvalidInput: empty content, unknown type, confidence outside [0, 1], or a
                ``supersedes`` target that is the memory itself or would close a cycle.
            SecretRefused: the content, agent, harness or anchor contains a credential and
                ``allow_secret`` is false.
            TooLarge: the record would be larger than ``MAX_RECORD_BYTES`` (1 MiB, in bytes).
            InvalidAnchor: the file is missing, outside the repository, binary, or the range is bad.
            UnknownMemory, AmbiguousId: a bad ``supersedes`` id.
        """
        return self._curator.learn(content, type=type, file=file, confidence=confidence, agent=agent,
                                   harness=harness, scope=scope, allow_secret=allow_secret, now=now,
                                   supersedes=supersedes, visibility=visibility)

    def refute(self, token: str, reason: str, by: str | None = None,
               allow_secret: bool = False) -> tuple[Memory, CommitInfo | None]:
        """Mark a memory refuted with a reason; refuted wins over every other status.

        Raises:
            InvalidInput: the reason is empty.
            SecretRefused: the reason or ``by`` contains a credential and ``allow_secret`` is false.
            TooLarge: the record would be larger than ``MAX_RECORD_BYTES``.
            UnknownMemory, AmbiguousId: bad id.
        """
        return self._editor.refute(token, reason, by, allow_secret)

    def unrefute(self, token: str) -> tuple[Memory, CommitInfo | None]:
        """Withdraw a memory's refutation (``tur refute --undo``), in one commit.

        A change like any other: stamped, and merged field by field by ``tur sync`` (a
        merge never undoes a refutation by itself; this does, explicitly). The status goes
        back to what it was when the memory was refuted (``stale``, asking for ``tur
        verify``, for a record refuted before gitmem kept that).

        Raises:
            InvalidInput: the memory is not refuted.
            UnknownMemory, AmbiguousId: bad id.
        """
        return self._editor.unrefute(token)

    def edit(self, token: str, *, content: str | None = None, type: MemoryType | str | None = None,
             file: str | None = None, allow_secret: bool = False, reanchor: bool = False,
             visibility: Iterable[str] | None = None) -> tuple[Memory, CommitInfo | None]:
        """Change a memory's content, type or anchor in place (``tur edit``), in one commit.

        The id stays (``tur show`` lists the old text in the ref's history); the local git identity becomes
        the memory's ``author``. ``file`` re-anchors it at HEAD (``path`` or ``path#Lstart-Lend``, relative
        to the current directory) and makes it fresh there; ``reanchor`` does so where git's diff maps its
        lines at HEAD (the staleness check's ``Verdict.maps_to``, as ``tur show`` prints it); a new ``type``
        takes that type's half-life; ``visibility`` names the agents it is for (empty: everyone).

        Raises:
            InvalidInput: nothing to change, empty content, an unknown type, ``file`` with ``reanchor``,
                or lines that cannot be mapped to HEAD.
            SecretRefused: the content or anchor looks like a credential (``allow_secret`` false).
            TooLarge: the record would be larger than ``MAX_RECORD_BYTES``.
            InvalidAnchor: a bad ``file`` (missing, outside the repository, uncommitted).
            UnknownMemory, AmbiguousId: bad id.
        """
        return self._editor.edit(token, content=content, type=type, file=file, allow_secret=allow_secret,
                                 mapped=self._verifier.where_now if reanchor else None, visibility=visibility)

    def stale_note(self, token: str) -> StaleNote | None:
        """The pre-tool hook's note on a memory not fresh now, else ``None`` (UnknownMemory, AmbiguousId)."""
        return self._verifier.stale_note(token)

    def set_confidence(self, token: str, confidence: float) -> tuple[Memory, CommitInfo | None]:
        """Change a memory's confidence (in [0, 1]).

        Raises:
            InvalidInput: confidence outside [0, 1].
            UnknownMemory, AmbiguousId: bad id.
        """
        return self._editor.set_confidence(token, confidence)

    def link(self, source: str, target: str, kind: RelationType | str | None,
             remove: bool = False) -> tuple[Memory, CommitInfo | None]:
        """Add ``source --kind--> target`` (idempotent); ``remove`` takes it out (any kind for ``None``).

        Raises:
            InvalidInput: unknown relation type, a memory linked to itself, a ``supersedes`` cycle (each
                memory of one hides the next; all leave wake), no ``kind`` to add, no relation to remove.
            UnknownMemory, AmbiguousId: bad id.
        """
        return (self._editor.unlink if remove else self._editor.link)(source, target, kind)

    def forget(self, token: str) -> CommitInfo | None:
        """Remove a memory from the tree; it stays in the ref's history.

        A malformed record can be forgotten too: nothing is parsed.

        Raises:
            UnknownMemory, AmbiguousId: bad id.
        """
        return self._editor.forget(token)

    def restore(self, token: str) -> tuple[Memory, CommitInfo | None]:
        """Bring back a forgotten memory's last version, by id or prefix (``forget --undo``).

        Raises:
            InvalidInput: it is stored. UnknownMemory, AmbiguousId: no forgotten memory, or several.
        """
        return self._editor.restore(token)

    def forget_path(self, path: str) -> CommitInfo | None:
        """Remove the entry at ``path`` of the memory tree (a file or a directory); it stays in history.

        What ``tur doctor`` names can be removed this way: a record in the wrong shard, a second record for
        an id, a symbolic link, a stray directory. The parts of the layout itself (``.gitmem``,
        ``memories``, a shard directory, ``continuity``) are refused unless they are not what they should be
        (a file named ``memories``).

        Raises:
            InvalidInput: no such entry, or a part of the layout.
        """
        return self._editor.forget_path(path)

    def doctor(self, fix: bool = False) -> DoctorReport:
        """List what readers skip in the memory tree; with ``fix``, repair the layout in one commit.

        Problems are the layout problems of ``Store.record_layout`` and ``root_problems``
        and the malformed records. Repairs: a readable record in the wrong shard, whose id
        has no record yet and was never forgotten (the memory ref's history says), moves to
        where its id says; a stray copy of a forgotten id is removed, never moved into place
        (a forget is never undone by a repair); every other layout problem (a second
        record for an id, a non-regular entry, a stray name) is removed from the tree. It
        stays in the ref's history. Malformed records are listed, never changed: fix them
        by hand or ``tur forget`` them.
        """
        return self._editor.doctor(fix)

    def set_read_progress(self, progress: Callable[[int, int], None] | None) -> None:
        """Report ``progress(parsed, to_parse)`` whenever a read parses record blobs.

        A warm read parses none; a cold read, or the first read after another process rewrote thousands of
        records, parses each new blob once (seconds on a big store).
        """
        self.records.set_progress(progress)

    def take_notices(self) -> list[str]:
        """Lines for stderr the stores gathered since the last call (a stale lock, a lost tip merged back)."""
        mine = self.__dict__.get("personal")  # only a personal store opened already has any
        return [*self.store.take_notices(), *(mine.take_notices() if mine is not None else ())]

    @cached_property
    def personal(self) -> Gitmem | None:
        """The person's own store (:mod:`gitmem.api.personal`), or ``None``: none yet, or damaged.

        Never created here (:func:`gitmem.api.personal.create_personal` does, on a first write);
        a damaged one adds one line to :meth:`take_notices`, and this store is served alone.
        """
        from gitmem.api.personal import open_personal
        return open_personal(self)

    def make_personal(self, remote_url: str | None = None) -> Gitmem:
        """The personal store, created (a bare repository) when there is none: what a write opens.

        With ``remote_url`` its remote ``origin`` is set to it (``tur remote setup --personal URL``).

        Raises:
            NotARepository: what is where the store should be is not a repository.
            RemoteError: git would not set the remote.
        """
        from gitmem.api.personal import create_personal
        self.__dict__["personal"] = mine = create_personal(self, remote_url)
        return mine

    def import_legacy(self, paths: Iterable[str | os.PathLike[str]],
                      allow_secret: bool = False, dry_run: bool = False,
                      progress: Callable[[int, int], None] | None = None) -> ImportResult:
        """Import legacy ``.tur/memories/*.yaml`` records (files or directories) in one commit.

        Records keep their fields, comments and key order; the id is recomputed as ``<type>-<8 hex>``
        (longer when a different statement holds it: ``result.renamed``) and the old one is kept under
        ``legacy_id`` (every command resolves it). Relations naming an old or new id of the batch, or a
        stored memory, point at the new ids; others are kept and listed in ``notes``. Records with no
        provenance load as ``unanchored`` with confidence 1.0 and no decay (see docs/design.md). A file with
        a credential in any field, or whose record would exceed ``MAX_RECORD_BYTES``, is listed in
        ``result.failed``. With ``dry_run`` nothing is written. ``progress(files_read, files)`` is called as
        the files are read and checked (the long part: thousands of files take tens of seconds).

        Raises:
            InvalidInput: a path does not exist.
        """
        return self._importer.import_legacy(paths, allow_secret, dry_run, progress)

    def import_tur(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        home: str | os.PathLike[str] | None = None,
        persona: str | None = None,
        allow_secret: bool = False,
        dry_run: bool = False,
        part: str | None = None,
    ) -> TurImportResult:
        """Import a store of the Tur package (its memories and persona) in one commit.

        Reads ``<path>/.tur/personas/<uuid>/memories/{active,archive,subsumed}/*.md`` and, with ``home``,
        the user-level store (``personas.yaml``, ``persona.yaml``, ``CONSTITUTION.md`` and its memories).
        Every field's mapping is in docs/coming-from-tur.md. Each memory keeps its Tur hash as ``legacy_id``
        (every command resolves it); relations point at the new ids; a memory already stored with the same
        type and content only gains legacy ids and relations, so a second run changes nothing. The persona
        becomes ``persona.yaml`` (Tier 0) unless another is stored, and the latest session note a continuity
        note. Credentials are refused as in :meth:`learn`.

        Args:
            path: the project directory holding ``.tur/`` (default: the working tree's root).
            home: the user-level Tur store (``~/.tur``) to read too, or ``None``.
            persona: the persona's name or id (prefix); default the active or only one.
            allow_secret: import content that looks like a credential.
            dry_run: write nothing; the result says what an import would do.
            part: ``"project"`` or ``"home"``: import only that part (``only_part`` in
                :mod:`gitmem.importers.tur_store`; the home part goes to the personal store).

        Returns:
            The report: counts per Tur type and state, new, merged and unchanged ids, every
            file not imported with the reason, and the commit.

        Raises:
            InvalidInput: no Tur store there, an unknown persona, or several and none chosen.
        """
        return self._importer.import_tur(path, home=home, persona=persona, allow_secret=allow_secret,
                                        dry_run=dry_run, part=part)

    # -- staleness ---------------------------------------------------------------------------

    def status_view(self, now: datetime | None = None, *, full_records: bool = True,
                    type: str | None = None, status: str | None = None,
                    file: str | None = None) -> StatusView:
        """Stored statuses with current weights (no staleness check, nothing written).

        Rows are sorted by id; with ``file``, only the memories anchored to it, in the order
        of :meth:`anchored_to`. ``type`` and ``status`` keep only that type or status
        (:class:`~gitmem.api.results.RowFilter`). With ``full_records=False`` rows carry
        read-only :class:`gitmem.cache.MemoryView` stand-ins instead of full records (what a
        caller that only shows ids, statuses, weights, anchors and content wants): 100,000 of
        them cost a fraction of a second instead of seconds.

        Raises:
            InvalidInput: an unknown type or status, or a ``file`` outside the repository.
        """
        from gitmem.api.status_results import RowFilter

        only = RowFilter.checked(type, status)
        order = self._context.anchored_to(file) if file is not None else None
        return self._verifier.status_view(now, full_records=full_records, only=only, order=order)

    def local_reasons(self) -> dict[str, str]:
        """The working-tree overlay of this clone: memory id -> why uncommitted changes make it stale.

        Local state only (``<git dir>/tur/worktree.json``, written by ``verify``, ``status``
        and the watcher; docs/sharing.md): never on the shared ref. Only entries that still
        hold (same HEAD, anchored file unchanged since it was checked).
        """
        return self.records.local_reasons()

    def verify(
        self,
        ids: list[str] | None = None,
        *,
        write: bool = True,
        confirm: bool = False,
        now: datetime | None = None,
        explicit: bool = True,
        progress: Callable[[int, int], None] | None = None,
        full_records: bool = True,
    ) -> VerifyOutcome:
        """Check memories against HEAD and the working tree; with ``write``, record changes.

        Every memory (or those in ``ids``) gets a verdict (see :mod:`gitmem.staleness.verdicts`). With
        ``write``, every changed record (status, reason, moved or corroborated anchor) is rewritten in one
        commit ``verify: …``, stamped with the time and the local git identity; a memory another process
        changed meanwhile is left to that process's write. Only what follows from commits is recorded: an
        uncommitted change to anchored lines shows the row ``stale`` with ``local`` set (``working tree:
        line 80 modified``) and goes to this clone's overlay (:meth:`local_reasons`), written whether or not
        ``write`` is set, never to the ref.

        Naming ``ids`` is an explicit check: a memory found fresh also gets ``last_verified_at = now``,
        restarting its time decay. With ``confirm`` a person vouches for them: each is set ``fresh``,
        re-anchored where git's diff maps its lines at HEAD (``Verdict.maps_to``), and the local git
        identity becomes its ``author`` (docs/sharing.md, Trust). Refuted memories are never changed by
        verify.

        With ``explicit=False`` the ``ids`` only narrow the check, as a background re-check does (``tur
        watch``): each named memory is judged exactly as the bulk path (no ``ids``) would judge it, its time
        decay is not restarted, and only memories whose status or reason changed are recorded (an anchor
        that merely moved is not worth a commit). ``confirm`` is always explicit.

        ``progress(checked, to_check)`` is called every 64 memories and at the end. Each row carries the
        stored status and reason it was judged against (``old_status``, ``old_reason``);
        ``row.status_changed`` says whether it is news.

        With ``full_records=False`` the rows of memories whose record the check leaves as it is carry
        read-only :class:`gitmem.cache.MemoryView` stand-ins (what a caller that shows ids, statuses,
        weights and anchors wants): a verify with nothing to change then builds no record model; with
        ``write``, so do the rows of the records it rewrites (a view of each as written), so that a verify
        rewriting most of 100,000 records holds none of them whole. Named ``ids`` always give full records.

        Raises:
            EmptyRepository: HEAD is unborn.
            InvalidInput: ``confirm`` without ``ids``, or a named memory whose lines cannot
                be mapped to HEAD (nothing is written).
            UnknownMemory, AmbiguousId: a bad id in ``ids``.
        """
        return self._verifier.verify(ids, write=write, confirm=confirm, now=now, explicit=explicit,
                                     progress=progress, full_records=full_records)

    # -- what an agent reads -----------------------------------------------------------------

    def persona_text(self) -> str | None:
        """The persona in force here (:mod:`gitmem.sharing.trust`), or ``None`` when there is none."""
        return self._context.persona_text()

    def proposals(self, tip: str | None = None) -> list[Proposal]:
        """The persona and note by untrusted authors, not in force here, with who wrote them (trust)."""
        return self._context.proposals(tip)

    def accept(self, note: bool = False) -> Version:
        """Put the proposed persona (``note``: note) in force in this clone only; InvalidInput: none waits."""
        return self._context.accept(note)

    def persona(self, tip: str | None = None) -> dict[str, Any] | None:
        """The persona in force here as a mapping (Tier 0 of wake), or ``None`` (see :meth:`persona_text`).

        Args:
            tip: the memory ref commit to read (default: the current tip).

        Raises:
            MalformedRecord: the stored persona is not a YAML mapping.
        """
        return self._context.persona(tip)

    def set_persona(self, data: bytes, where: str = "persona",
                    allow_secret: bool = False) -> CommitInfo | None:
        """Store ``data`` (a YAML mapping: identity and invariants) as ``persona.yaml``.

        Raises:
            MalformedRecord: not a safe YAML mapping.
            TooLarge: larger than ``gitmem.record.limits.MAX_PERSONA_BYTES`` (64 KiB).
            SecretRefused: a line looks like a credential and ``allow_secret`` is false.
        """
        return self._context.set_persona(data, where, allow_secret)

    def spark(self, text: str, now: datetime | None = None, allow_secret: bool = False) -> str:
        """Record a continuity note for the next session; return its name.

        Raises:
            InvalidInput: empty text.
            TooLarge: larger than ``gitmem.record.limits.MAX_NOTE_BYTES`` (64 KiB).
            SecretRefused: the note looks like it holds a credential and ``allow_secret`` is false.
        """
        return self._context.spark(text, now, allow_secret)

    def continuity(self, tip: str | None = None) -> str | None:
        """The newest continuity note in force at ``tip`` (default: now; see :meth:`proposals`), or ``None``.

        A note over ``MAX_NOTE_BYTES`` (stored before the limit, or by another tool) is cut there.
        """
        return self._context.continuity(tip)

    def token_counter(self) -> TokenCounter:
        """The configured tokenizer (loaded lazily on first count)."""
        return self._context.token_counter()

    def wake(self, token_budget: int | None = None, now: datetime | None = None,
             max_chars: int | None = None, via: Via | None = None) -> tuple[WakeResult, list[Skipped]]:
        """Compile the wake prompt (docs/design.md) within ``token_budget`` tokens and ``max_chars``.

        A memory longer than its tier's share is shown compressed (a preview, its citation
        and ``tur show ID``; its assembly entry says ``compressed``), never silently dropped.
        A wake of a state read before reads the plan it saved: the same result, without the
        records table (docs/performance.md, Warm wake).

        Args:
            token_budget: tokens; ``None`` takes the configured default
                (:data:`~gitmem.defaults.WAKE_TOKEN_BUDGET`); 0 is unbounded.
            now: the time decay is computed at (default: now, UTC).
            max_chars: characters the text may take; ``None`` or 0: no character cap. Both
                caps hold.
            via: the surface, harness, session and agent the wake goes to (bound memories of other
                agents left out; its harness's budget applies): its assembly record is logged
                (docs/log.md); ``None``: that of ``with injecting(...)``, else (a preview) not.

        Returns:
            The :class:`~gitmem.context.wake.WakeResult` (text + assembly record) and the skipped blobs.

        Raises:
            InvalidInput: a negative budget or character cap (:func:`~gitmem.api.context.check_limits`).
            TokenizerUnavailable: the configured encoding cannot be loaded offline.
        """
        from gitmem.api.context import check_limits

        check_limits(token_budget=token_budget, max_chars=max_chars)
        via = via or _current_via()
        out = self._context.wake(token_budget, now, max_chars, via)
        if via is not None:
            self.injections.wake(out[0], via)
        return out

    def recall(
        self,
        query: str,
        *,
        top_k: int | None = None,
        token_budget: int | None = None,
        include_stale: bool = False,
        full_records: bool = True,
        now: datetime | None = None,
        max_chars: int | None = None,
        file: str | None = None,
        via: Via | None = None,
    ) -> tuple[RecallResult, list[Skipped]]:
        """Memories relevant to ``query``: BM25 with neighbours and field boosts (docs/wake-recall.md).

        Refuted memories never appear; stale ones only with ``include_stale``. With
        ``full_records=False`` hits may carry read-only :class:`gitmem.cache.MemoryView`
        stand-ins (every field :mod:`gitmem.context.entry` formats) instead of full records, which
        spares building the record models: what a caller that only renders wants.

        With ``file``, the memories anchored to that file come first (those the query
        ranks, best first, then the others, widest anchor first; with no query, most confident
        first), then the other hits; a
        memory is matched by the path its anchor names now (verify moves the anchor of a
        renamed file). A hit that does not fit a cap whole is shown compressed.

        Args:
            query: free text; may be empty only with ``file``.
            top_k: most hits (default from config, 5), >= 1.
            token_budget: tokens the rendered block may take; ``None`` or 0: no cap.
            include_stale: let stale and superseded memories through (marked stale).
            full_records: hits carry full records (else read-only stand-ins).
            now: unused by the ranking today; kept for a stable signature.
            max_chars: characters the rendered block may take; ``None`` or 0: no cap.
            file: a path (relative to the current directory, or absolute) in the working tree.
            via: as for :meth:`wake`: logged when given.

        Raises:
            InvalidInput: empty query without ``file``, ``top_k`` < 1, a negative cap, or a
                file outside the repository.
        """
        from gitmem.api.context import check_limits

        check_limits(top_k=top_k, token_budget=token_budget, max_chars=max_chars)
        out = self._context.recall(query, top_k=top_k, token_budget=token_budget,
                                   include_stale=include_stale, full_records=full_records, now=now,
                                   max_chars=max_chars, file=file, via=(via := via or _current_via()))
        if via is not None:
            self.injections.recall(out[0], via, budget=token_budget)
        return out

    def warm(self, now: datetime | None = None) -> None:
        """Build what the next :meth:`wake` and :meth:`recall` at the current tip read.

        The record table, wake's token counts, commit distances and plan, and recall's index
        of the default candidates are built and saved in the read cache; at a tip already warm
        nothing is built. A long-running surface (``tur mcp``) calls it after each write, so
        that the next wake and recall are as fast as before the write.

        Args:
            now: the time weights are computed at (default: now, UTC).

        Raises:
            TokenizerUnavailable: a new entry must be counted and the encoding cannot load.
        """
        self._context.warm(now)

    def anchored_to(self, path: str) -> list[str]:
        """Ids of the memories anchored to ``path``: most confident, then most recently verified, first.

        ``path`` is relative to the current directory, or absolute; refuted memories are
        listed too.

        Raises:
            InvalidInput: the path is outside the repository.
        """
        return self._context.anchored_to(path)

    # -- sharing -----------------------------------------------------------------------------

    def setup_remote(self, remote: str = "origin") -> bool:
        """Make a plain ``git fetch`` of ``remote`` also fetch teammates' memories (idempotent).

        Adds the fetch refspec ``+refs/tur/memories:refs/tur/remotes/<remote>/memories``;
        never a push refspec.

        Returns:
            True when the refspec was added, False when it was already configured.

        Raises:
            RemoteError: no such remote, or the git config could not be written.
        """
        return self._sharing.setup_remote(remote)

    def remote_hint(self) -> str | None:
        """One line for a clone with no memory ref but a remote, else ``None``; no network.

        ``tur remote setup && tur sync`` when nothing was fetched yet; after ``tur remote
        setup`` and a plain ``git fetch``, how many memories wait in the remote-tracking ref.
        """
        return self._sharing.remote_hint()

    def sync(self, remote: str = "origin", *, dry_run: bool = False, attempts: int = 5,
             allow_secret: bool = False, publish: bool = True) -> SyncResult:
        """Fetch, merge record by record and push the memory ref (see :mod:`gitmem.sharing.sync`).

        An incoming version that a reader would refuse (too large, not where its id says), or in which the
        credential scan finds something, is not adopted: the local version stays, and ``result.merged`` and
        ``result.warnings`` name it and say what to do. A malformed incoming version of a valid record never
        replaces it. Two different statements with one id both survive (one moves to a longer id). A record
        changed on both sides is merged field by field: the later change of each field wins, and
        ``result.merged`` names each field decided and the side that lost (docs/sharing.md).
        ``result.new_authors`` lists writers this clone had not seen before.

        Args:
            remote: a remote listed by ``git remote``.
            dry_run: report what would merge and push; only ``refs/tur/remotes/<remote>/memories`` moves.
            attempts: pushes to try when the remote keeps moving (fetch and merge between).
            allow_secret: adopt incoming versions even where the credential scan finds something.
            publish: push the memory ref to a remote that has none yet, which makes this
                clone's memories visible to everyone who can fetch from it. The CLI and the
                TUI pass ``False`` unless the user asked (``tur sync --publish``, a yes on a
                terminal); then ``result.unpublished`` says that nothing was pushed.

        Raises:
            RemoteError: unknown or unreachable remote, refused push, or a remote that
                kept moving; never a force push.
            FormatVersion: the remote's ref is not a gitmem memory history.
        """
        return self._sharing.sync(remote, dry_run=dry_run, attempts=attempts, allow_secret=allow_secret,
                                  publish=publish, require_signatures=self.settings.trust.require_signatures)

    # -- the read cache ----------------------------------------------------------------------

    def cache_info(self) -> CacheInfo:
        """Where the read cache is, its files and their sizes (bytes)."""
        return self.records.cache.info()

    def cache_clear(self) -> int:
        """Delete every read-cache file (the next read rebuilds them); return how many."""
        return self.records.cache.clear()


def _current_via() -> Via | None:
    """The ``via`` of the enclosing ``injecting`` block; imported here, on a wake or recall only."""
    from gitmem.context.injection import current_via

    return current_via()
