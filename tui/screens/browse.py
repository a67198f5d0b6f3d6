"""The browse screen: filter bar, memory table, detail pane, and the curation actions."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Callable
from datetime import datetime

from rich.text import Text
from textual import events, work
from textual.app import ComposeResult, SuspendNotSupported
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Input, Select, Static

from gitmem.api import Gitmem, LearnActions, LearnResult, VerifyOutcome, empty_notice, split_anchor_ref
from gitmem.errors import GitmemError
from tui.actions import browse_bindings
from tui.commands import GitmemCommands
from tui.detail import load_detail
from tui.editor import anchor_location, editor_command, run_editor, user_editor
from tui.follow import Check, WorktreeFollow
from tui.messages import FilterChanged, MemoryChanged, RefMoved, WorktreeChecked
from tui.rows import Filter, Row, apply_filter, to_rows
from tui.screens.confidence import ConfidenceScreen
from tui.screens.confirm import ConfirmScreen
from tui.screens.edit import EditScreen, changes
from tui.screens.help import HelpScreen
from tui.screens.learn import Draft, LearnScreen
from tui.screens.link import LinkRequest, LinkScreen
from tui.screens.refute import RefuteScreen
from tui.screens.wake_preview import WakePreviewScreen
from tui.text import first_line
from tui.widgets.filter_bar import FilterBar
from tui.widgets.memory_detail import MemoryDetail
from tui.widgets.memory_table import MemoryTable

__all__ = ["NARROW_WIDTH", "BrowseScreen"]

#: What a write's notification says when it succeeds (verify and learn say more themselves).
_DONE = {"refute": "refuted", "forget": "forgot", "confidence": "confidence set for",
         "undo refutation": "refutation withdrawn from", "edit": "edited", "link": "linked"}

NARROW_WIDTH = 200
"""Below this many columns the detail pane goes under the table instead of beside it: beside
it, the table would lose the anchor column or cut the content at some fifty cells."""
#: How the learn notes name what they suggest: with this screen's keys.
_LEARN_ACTIONS = LearnActions(supersede="press l on {id} to link it to {other}",
                              re_anchor="edit it (e) to re-anchor it",
                              retype="edit {id} (e)")


class BrowseScreen(Screen[None]):
    """Every memory in a filterable table with a detail pane; the keys of :mod:`tui.actions` act on it.

    Args:
        gm: the opened facade.
        clock: returns "now" for weights and writes; ``None`` = the real clock.
        on_write: called right after this screen wrote to the memory ref.
        editor: the editor command line for ``o``; ``None`` = ``$VISUAL`` / ``$EDITOR``.
        follow: follow working-tree edits (a watchfiles worker, :mod:`tui.follow`).
    """

    CSS_PATH = "browse.tcss"
    BINDINGS = [*browse_bindings(), Binding("escape", "focus_table", "Table", show=False)]
    COMMANDS = {GitmemCommands}

    def __init__(self, gm: Gitmem, clock: Callable[[], datetime] | None = None,
                 on_write: Callable[[], None] | None = None, editor: str | None = None,
                 follow: bool = True) -> None:
        super().__init__()
        self.gm = gm
        self.clock = clock
        self.on_write = on_write
        """Called right after this screen wrote to the memory ref (the app takes the new tip as seen)."""
        self.editor = editor
        self.follow = follow
        self.watching: tuple[str, ...] = ()
        """The directories the working-tree follower watches: set once the operating system's
        watch is in place (an edit from then on is seen), empty before and after."""
        self.batches = 0
        """Batches of working-tree changes the follower has handled, re-checking or not."""
        self._follow_stop = threading.Event()
        self.rows: list[Row] = []
        self.marked: str | None = None
        """The memory marked with ``m``: the target the next link offers."""
        self.filter = Filter()
        self.skipped = 0
        self._shown: tuple | None = None  # (row, any rows, tip) the detail pane shows

    def compose(self) -> ComposeResult:
        """Header, filter bar, table + detail, a summary line and the footer."""
        yield Header()
        yield FilterBar()
        with Horizontal(id="main"):
            yield MemoryTable(id="memories")
            yield MemoryDetail(id="detail")
        yield Static("", id="summary-line", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        """Load the memories, focus the table and start following the working tree."""
        self.reload()
        self.table.focus()
        self._restart_follow()

    def on_unmount(self) -> None:
        """Stop the working-tree follower (its watch thread ends within a step, 200 ms)."""
        self._follow_stop.set()

    def on_resize(self, event: events.Resize) -> None:
        """Stack the detail under the table on a narrow terminal, beside it on a wide one."""
        self.set_class(event.size.width < NARROW_WIDTH, "narrow")

    @property
    def table(self) -> MemoryTable:
        """The memory table."""
        return self.query_one(MemoryTable)

    def _now(self) -> datetime | None:
        return self.clock() if self.clock else None

    # -- loading -----------------------------------------------------------------------------

    def reload(self) -> None:
        """Re-read every memory (statuses and weights) and redraw the table and the detail."""
        try:
            view = self.gm.status_view(now=self._now(), full_records=False)
            legacy = self.gm.legacy_ids()
        except GitmemError as exc:
            self.notify(str(exc), title="load", severity="error", markup=False)
            return
        self.rows = to_rows(view.rows, legacy)
        mine = self.gm.personal
        if mine is not None:  # the person's own memories, marked, after the project's
            try:
                self.rows += to_rows(mine.status_view(now=self._now(), full_records=False).rows,
                                     mine.legacy_ids(), store="personal")
            except GitmemError as exc:
                self.notify(f"personal memories left out: {exc}", title="load", severity="warning",
                            markup=False)
        self.skipped = len(view.skipped)
        self._redraw()

    def _redraw(self) -> None:
        shown = apply_filter(self.rows, self.filter)
        self.table.show(shown)
        line = f"{len(shown)} of {len(self.rows)} memories"
        if self.skipped:
            line += f" · {self.skipped} malformed record(s) skipped"
        self.query_one("#summary-line", Static).update(Text(line))
        self._show_detail()

    def _gm_of(self, row: Row) -> Gitmem:
        """The store ``row`` is in: the project's, or the personal store for a personal row."""
        return (self.gm.personal or self.gm) if row.store else self.gm

    def _selected_row(self) -> Row | None:
        selected = self.table.selected_id
        return next((r for r in self.rows if r.id == selected), None)

    def _show_detail(self) -> None:
        detail = self.query_one(MemoryDetail)
        row = self._selected_row()
        # A redraw highlights the same row up to three times (clear, add, move): load once
        # per row and ref tip (the detail reads the record, its history and a git diff).
        shown = (row, bool(self.rows), self.gm.tip())
        if shown == self._shown:
            return
        self._shown = shown
        if row is None:
            f = self.filter
            asked = " ".join(w for w in (f"type={f.type}" if f.type else "",
                                         f"status={f.status}" if f.status else "", f.text) if w)
            detail.show(None, (empty_notice(None, asked) or "") if asked or not self.rows
                        else "no memory selected")
            return
        try:
            detail.show(load_detail(self._gm_of(row), row))
        except GitmemError as exc:
            detail.show(None, str(exc))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """The cursor moved: show that memory."""
        if event.data_table is self.table:
            self._show_detail()

    def on_filter_changed(self, message: FilterChanged) -> None:
        """Apply the new filter."""
        self.filter = message.filter
        self._redraw()

    def on_ref_moved(self, message: RefMoved) -> None:
        """Another write (ours or another process's): reload, and watch the anchors as they are now."""
        self.reload()
        self._restart_follow()

    # -- following the working tree ----------------------------------------------------------

    def _restart_follow(self) -> None:
        if not self.follow:
            return
        self._follow_stop.set()  # ends the running watch (if any) within a step
        self._follow_stop = threading.Event()
        self.watching = ()
        self._follow_worktree(self._follow_stop)

    @work(exclusive=True, group="follow", exit_on_error=False)
    async def _follow_worktree(self, stop: threading.Event) -> None:
        """Watch the anchored files and the git state; re-check what a batch of changes touches.

        When the operating system refuses the watch (the inotify limit), it polls instead and
        says so once, as ``tur watch`` does.
        """
        follow = await asyncio.to_thread(WorktreeFollow, self.gm.reopen())
        dirs = follow.watch_dirs()
        if not dirs:
            return
        try:
            await self._watch(follow, dirs, stop, polling=False)
        except (OSError, RuntimeError) as exc:  # watchfiles' internal error is a RuntimeError
            self.notify(f"following the working tree by polling: the watch was refused ({exc})",
                        title="watch", severity="warning", markup=False)
            await self._watch(follow, dirs, stop, polling=True)

    async def _watch(self, follow: WorktreeFollow, dirs: list[str], stop: threading.Event,
                     polling: bool) -> None:
        """Watch ``dirs`` (each without its subdirectories) until ``stop`` is set.

        watchfiles' own watcher, as :func:`watchfiles.awatch` drives it (1.6 s debounce, 200 ms
        steps), but opened before :attr:`watching` is set, which ``awatch`` cannot tell: it
        opens the watch only on its first step.

        Raises:
            OSError, RuntimeError: the operating system refused the watch (watchfiles' internal
                error is a RuntimeError).
        """
        # lazy: only the running app pays for them; anyio is what awatch waits on the thread with
        import anyio.to_thread
        from watchfiles._rust_notify import RustNotify

        notify = await anyio.to_thread.run_sync(RustNotify, dirs, False, polling, 300, False, False)
        with notify:  # closes the OS watch when the loop ends
            self.watching = tuple(dirs)
            try:
                while not stop.is_set():
                    # Shielded as in awatch: a cancelled worker waits for the step to end (the
                    # stop event is set first) before the watch is closed under it.
                    raw = await anyio.to_thread.run_sync(notify.watch, 1600, 200, 5000, stop)
                    if raw in ("stop", "signal"):
                        return
                    if isinstance(raw, set):
                        await self._handle(follow, {path for change, path in raw
                                                    if follow.keep(change, path)})
            finally:
                if stop is self._follow_stop:  # else a newer watch has taken over, or is starting
                    self.watching = ()

    async def _handle(self, follow: WorktreeFollow, changed: set[str]) -> None:
        """Re-check what one batch of changed paths calls for, then count the batch."""
        if changed:
            try:
                check, outcome = await asyncio.to_thread(self._check, follow, changed)
            except GitmemError as exc:
                self.post_message(WorktreeChecked("error", (), (), str(exc)))
            else:
                if check is not None and outcome is not None:
                    self._apply(check, outcome)
        self.batches += 1

    def _check(self, follow: WorktreeFollow, changed: set[str]) -> tuple[Check | None, VerifyOutcome | None]:
        gm = self.gm.reopen()  # a handle per batch, as the watcher takes: nothing cached survives
        check = follow.check(gm, changed)
        return (check, follow.run(gm, check)) if check is not None else (None, None)

    def _apply(self, check: Check, outcome: VerifyOutcome) -> None:
        """Show the re-check: the rows whose status or reason moved, and the detail if concerned."""
        by_id = {r.memory_id: r for r in outcome.rows}
        changed = []
        for index, row in enumerate(self.rows):
            new = by_id.get(row.id)
            if new is None or (new.status.value, new.reason) == (row.status, row.reason):
                continue
            self.rows[index] = updated = dataclasses.replace(row, status=new.status.value, reason=new.reason)
            self.table.update_row(updated)
            changed.append(row.id)
        selected = self._selected_row()
        concerned = selected is not None and (
            selected.id in by_id or split_anchor_ref(selected.anchor)[0] in check.paths)
        if concerned:
            self._shown = None  # the diff follows the file even when the status stays
            self._show_detail()
        if self.filter.status is not None and changed:
            self._redraw()
        self.post_message(WorktreeChecked(check.trigger, check.paths, tuple(changed)))

    # -- actions -----------------------------------------------------------------------------

    def _target(self) -> Row | None:
        row = self._selected_row()
        if row is None:
            self.notify("no memory selected", severity="warning")
        return row

    def _run(self, what: str, memory_id: str, call: Callable[[], object]) -> bool:
        """Run a facade call; notify a GitmemError instead of raising. True on success."""
        try:
            call()
        except GitmemError as exc:
            self.notify(str(exc), title=f"{what} {memory_id}".strip(), severity="error", markup=False)
            return False
        self.post_message(MemoryChanged(memory_id, what))
        if what in _DONE:
            self.notify(f"{_DONE[what]} {memory_id}", title=what, markup=False)
        if self.on_write is not None:
            self.on_write()
        self.reload()
        self._restart_follow()  # the anchored files may have changed
        return True

    def action_verify(self) -> None:
        """Verify the selected memory explicitly (restarts its decay when fresh)."""
        row = self._target()
        if row is None:
            return
        outcome = []

        def call() -> None:
            outcome.extend(self._gm_of(row).verify([row.id], now=self._now()).rows)

        if self._run("verify", row.id, call) and outcome:
            r = outcome[0]
            text = f"{row.id}: {r.status.value}" + (f" ({r.reason})" if r.reason else "")
            self.notify(text, title="verify", markup=False)

    def action_confirm(self) -> None:
        """Vouch for the selected memory: stale but still true (``tur verify ID --confirm``)."""
        row = self._target()
        if row is None:
            return
        outcome = []

        def call() -> None:
            outcome.extend(self._gm_of(row).verify([row.id], confirm=True, now=self._now()).rows)

        if self._run("confirm", row.id, call) and outcome:
            r = outcome[0]
            at = r.new_ref or (r.memory.provenance.context_ref if r.memory.provenance else None)
            self.notify(f"{row.id}: {r.status.value}, confirmed at HEAD" + (f" ({at})" if at else ""),
                        title="confirm", markup=False)

    def action_refute(self) -> None:
        """Ask for a reason, then refute the selected memory."""
        row = self._target()
        if row is None:
            return

        def done(reason: str | None) -> None:
            if reason:
                gm = self._gm_of(row)
                self._run("refute", row.id, lambda: gm.refute(row.id, reason, by=self._identity()))

        self.app.push_screen(RefuteScreen(row.id, first_line(row.content, 200)), done)

    def _identity(self) -> str | None:
        try:
            return self.gm.identity()
        except GitmemError:
            return None

    def action_forget(self) -> None:
        """Confirm, then forget the selected memory (it stays in the ref's history)."""
        row = self._target()
        if row is None:
            return

        def done(yes: bool | None) -> None:
            if yes:
                self._run("forget", row.id, lambda: self._gm_of(row).forget(row.id))

        self.app.push_screen(
            ConfirmScreen(f"Forget {row.id}?", first_line(row.content, 200)), done
        )

    def action_confidence(self) -> None:
        """Ask for a new confidence in [0, 1] for the selected memory."""
        row = self._target()
        if row is None:
            return

        def done(value: float | None) -> None:
            if value is not None:
                self._run("confidence", row.id, lambda: self._gm_of(row).set_confidence(row.id, value))

        self.app.push_screen(ConfidenceScreen(row.id, row.confidence), done)

    def action_wake(self) -> None:
        """Open the wake preview at the configured budget."""
        try:
            budget = self.gm.settings.wake.token_budget
        except GitmemError as exc:
            self.notify(str(exc), title="wake", severity="error", markup=False)
            return
        self.app.push_screen(WakePreviewScreen(self.gm, budget, self.clock))

    def action_injections(self) -> None:
        """Open what the agent saw: the injection log by session."""
        from tui.screens.injections import InjectionsScreen

        self.app.push_screen(InjectionsScreen(self.gm))

    def action_search(self) -> None:
        """Focus the search input."""
        self.query_one("#search", Input).focus()

    def action_focus_table(self) -> None:
        """Back from the filter bar to the table; from the search box, the search cleared."""
        search = self.query_one("#search", Input)
        if self.focused is search:
            search.value = ""  # posts FilterChanged: every memory shows again
        self.table.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter in the search box: the filter stays, the keys act on the table again."""
        if event.input.id == "search":
            event.stop()
            self.table.focus()

    def action_filter(self) -> None:
        """Focus the filter bar (the type select; Tab goes on to the status and the search)."""
        self.query_one("#type-filter", Select).focus()

    def action_help(self) -> None:
        """Show every key (the help screen)."""
        self.app.push_screen(HelpScreen())

    def action_unrefute(self) -> None:
        """Withdraw the selected memory's refutation (the facade refuses a memory that is not refuted)."""
        row = self._target()
        if row is not None:
            self._run("undo refutation", row.id, lambda: self._gm_of(row).unrefute(row.id))

    def action_learn(self) -> None:
        """Ask for a new memory (text, type, optional anchor), then learn it and select it."""

        def done(draft: Draft | None) -> None:
            if draft is None:
                return
            learned: list[LearnResult] = []

            def call() -> None:
                learned.append(self.gm.learn(draft.content, type=draft.type, file=draft.file,
                                             now=self._now()))

            if self._run("learn", "", call) and learned:
                result = learned[0]
                self._select(result.memory.id)
                lines = [f"learned {result.memory.id}"] if result.created else []
                # The dialog always holds a type (fact unless changed): a known memory keeps
                # its own without a note, as before the dialog had one.
                lines += result.notes(None, _LEARN_ACTIONS)
                self.notify("\n".join(lines), title="learn", markup=False)

        self.app.push_screen(LearnScreen(), done)

    def action_edit(self) -> None:
        """Edit the selected memory's content, type or anchor (the id stays)."""
        row = self._target()
        if row is None:
            return
        screen = EditScreen(row.id, row.content, row.type, row.anchor or None)

        def done(draft: Draft | None) -> None:
            if draft is None:
                return
            edits = changes(screen.initial, draft)
            if draft.file is None and screen.initial.file is not None:
                # tur edit re-anchors, it never removes an anchor: say so rather than ignore it.
                self.notify(f"the anchor stays {screen.initial.file}: edit moves an anchor, it "
                            "cannot remove one", title=f"edit {row.id}", severity="warning",
                            markup=False)
            if not edits:
                self.notify("nothing changed", title=f"edit {row.id}", markup=False)
                return
            self._run("edit", row.id, lambda: self._gm_of(row).edit(
                row.id, content=edits.get("content"), type=edits.get("type"), file=edits.get("file")))

        self.app.push_screen(screen, done)

    def action_mark(self) -> None:
        """Mark the selected memory as the other end of the next link (``m`` again unmarks it)."""
        row = self._target()
        if row is None:
            return
        self.marked = None if self.marked == row.id else row.id
        self.notify(f"marked {row.id}: select another memory and press l to link them"
                    if self.marked else f"unmarked {row.id}", title="link", markup=False)

    def action_link(self) -> None:
        """Relate the selected memory to another (supports, contradicts, refines, supersedes).

        The memory marked with ``m`` fills the target; the link clears the mark.
        """
        row = self._target()
        if row is None:
            return
        marked = self.marked if self.marked != row.id else None

        def done(req: LinkRequest | None) -> None:
            if req is not None:
                self.marked = None
                self._run("link", req.source, lambda: self.gm.link(req.source, req.target, req.kind))

        self.app.push_screen(LinkScreen(row.id, first_line(row.content, 200), marked or "",
                                        [r.id for r in self.rows]), done)

    def action_open_editor(self) -> None:
        """Open the selected memory's anchored lines in the editor, the app suspended meanwhile."""
        row = self._target()
        if row is None:
            return
        if not row.anchor:
            self.notify(f"{row.id} has no anchor to open", severity="warning", markup=False)
            return
        editor = self.editor or user_editor()
        workdir = self.gm.paths.workdir
        if not editor or workdir is None:
            self.notify("set $EDITOR (for example `export EDITOR=vim`) and start tur tui again"
                        if workdir else "a bare repository has no files to open",
                        title="open", severity="warning", markup=False)
            return
        path, line = anchor_location(workdir, row.anchor)
        if not path.is_file():
            self.notify(f"{row.anchor} is not in the working tree", title="open", severity="warning",
                        markup=False)
            return
        self._edit_file(editor_command(editor, path, line))
        self._shown = None  # the file may have changed: redraw the diff
        self._show_detail()

    def _edit_file(self, argv: list[str]) -> None:
        try:
            try:
                with self.app.suspend():
                    code = run_editor(argv)
            except SuspendNotSupported:
                if not self.app.is_headless:
                    self.notify("this terminal cannot hand over to an editor", title="open",
                                severity="warning")
                    return
                # headless (the tests): no terminal to hand over, the editor runs as it is
                code = run_editor(argv, interactive=False)
        except OSError as exc:
            self.notify(f"cannot run {argv[0]}: {exc}", title="open", severity="error", markup=False)
            return
        if code:
            self.notify(f"{argv[0]} exited with status {code}", title="open", severity="warning",
                        markup=False)

    def action_sync(self) -> None:
        """Fetch, merge and push the memories with ``origin``, in the background."""
        self.notify("syncing with origin…", title="sync")
        self._sync()

    @work(thread=True, exclusive=True, group="sync")
    def _sync(self) -> None:
        # a handle of its own: the table keeps reading through self.gm meanwhile
        try:
            result = self.gm.reopen().sync(publish=False)
        except GitmemError as exc:
            self.app.call_from_thread(self.notify, str(exc), title="sync", severity="error",
                                      markup=False)
            return
        line = f"{result.status}: {result.ahead} ahead, {result.behind} behind"
        if result.unpublished:  # publishing is a decision to take at the command line
            line += " · not published: origin has no memories yet; tur sync --publish shares yours"
        if result.warnings:
            line += f" · {len(result.warnings)} warning(s): {result.warnings[0]}"
        self.app.call_from_thread(self._synced, line)

    def _synced(self, line: str) -> None:
        if self.on_write is not None:
            self.on_write()
        self.reload()
        self._restart_follow()
        # Last: whoever waits for the notice (a person, a test) finds the table reloaded.
        self.notify(line, title="sync", markup=False)

    def _select(self, memory_id: str) -> None:
        """Put the cursor on ``memory_id`` when the table lists it."""
        table = self.table
        if memory_id in table.rows:
            table.move_cursor(row=table.get_row_index(memory_id))
