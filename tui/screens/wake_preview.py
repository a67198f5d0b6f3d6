"""The wake preview: what an agent would read at session start, under a budget the user changes."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.timer import Timer
from textual.validation import Integer
from textual.widgets import DataTable, Footer, Header, Input, Label, Static

from gitmem.api import Gitmem, WakeResult
from gitmem.errors import GitmemError
from tui.messages import RefMoved
from tui.text import literal

__all__ = ["DEBOUNCE_S", "TierUse", "WakePreviewScreen", "tier_use", "usage_line"]

STACKED_BELOW = 120
"""Columns under which the prompt and the assembly table stack instead of sitting side by side."""

DEBOUNCE_S = 0.3
"""A budget typed is compiled once no key came for this long (seconds)."""


@dataclass(frozen=True)
class TierUse:
    """Token use of one wake tier: tokens of included entries, entries included and excluded."""

    tier: int
    tokens: int
    included: int
    excluded: int


def tier_use(result: WakeResult) -> list[TierUse]:
    """Per-tier use (tiers 0, 1, 2) from the assembly record.

    The tokens are the entries' own tokens; section headers and the advisory are only in
    ``result.tokens``, so the tiers' sum can be a little lower than the total.
    """
    out = []
    for tier in (0, 1, 2):
        entries = [e for e in result.assembly if e.tier == tier]
        out.append(TierUse(
            tier=tier,
            tokens=sum(e.tokens for e in entries if e.included),
            included=sum(1 for e in entries if e.included),
            excluded=sum(1 for e in entries if not e.included),
        ))
    return out


def usage_line(result: WakeResult) -> str:
    """``wake: 108/120 tokens; excluded: 1 over_budget, 1 stale`` (``/unbounded`` without a budget)."""
    budget = "unbounded" if result.budget is None else str(result.budget)
    excluded = ", ".join(f"{n} {reason}" for reason, n in result.excluded_counts().items())
    return f"wake: {result.tokens}/{budget} tokens" + (f"; excluded: {excluded}" if excluded else "")


class WakePreviewScreen(Screen[None]):
    """Budget input, tokens used / budget, per-tier use, the wake text and the assembly table.

    A budget typed is compiled :data:`DEBOUNCE_S` after the last key, in a thread (a wake
    over thousands of memories takes a while): the field stays the user's alone, nothing
    ever writes to it, and a result for a budget that is no longer the field's is dropped.
    A move of the memory ref recompiles too.
    """

    CSS_PATH = "wake_preview.tcss"
    BINDINGS = [Binding("escape", "close", "Back")]

    def __init__(self, gm: Gitmem, budget: int, clock: Callable[[], datetime] | None = None) -> None:
        super().__init__()
        self.gm = gm
        self.budget = budget
        """The budget in the field (tokens; 0 = unbounded): what the preview must end up showing."""
        self.clock = clock
        self.result: WakeResult | None = None
        self.shown_budget: int | None = None
        """The budget :attr:`result` was compiled at (``None`` before the first)."""
        self.compiles = 0
        """Wakes compiled so far (a burst of keys is one)."""
        self._timer: Timer | None = None
        self._lock = threading.Lock()  # one compile at a time on the worker's handle
        self._worker_gm: Gitmem | None = None

    def compose(self) -> ComposeResult:
        """Budget row, usage, tiers, then the text and the assembly side by side."""
        yield Header()
        with Horizontal(id="budget-row"):
            yield Label("token budget (0 = unbounded)")
            # ASCII digits only: type="integer" alone lets other scripts' digits in, which the
            # field would then show while the preview kept the last number it could read.
            yield Input(str(self.budget), id="budget", type="integer", restrict=r"[0-9]*",
                        max_length=9, validators=[Integer(minimum=0)])
        yield Static("", id="usage", markup=False)
        yield Static("", id="tiers", markup=False)
        with Horizontal(id="panes"):
            with VerticalScroll(id="wake-scroll"):
                yield Static("", id="wake-text", markup=False)
            yield DataTable(id="assembly", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_resize(self, event: events.Resize) -> None:
        """Below 120 columns the prompt and the assembly table stack, each as wide as the screen."""
        self.set_class(event.size.width < STACKED_BELOW, "narrow")

    def on_mount(self) -> None:
        """Set up the assembly columns and compile once."""
        self.sub_title = "wake preview"
        table = self.query_one("#assembly", DataTable)
        for name in ("tier", "id", "tokens", "salience", "outcome"):
            table.add_column(name, key=name)
        self.compile()

    def compile(self) -> None:
        """Compile the wake at :attr:`budget` in the background; a GitmemError is notified."""
        self._compile(self.budget)

    @work(thread=True, group="wake", exclusive=True)
    def _compile(self, budget: int) -> None:
        with self._lock:
            if budget != self.budget:
                return  # typed on meanwhile: the newer budget has its own compile coming
            # a handle of its own: the browse screen and the ref poll read self.gm meanwhile
            gm = self._worker_gm = self._worker_gm or self.gm.reopen()
            try:
                now = self.clock() if self.clock else None
                result, _ = gm.wake(token_budget=budget, now=now)
            except GitmemError as exc:
                self.app.call_from_thread(self.notify, str(exc), title="wake", severity="error",
                                          markup=False)
                return
        self.app.call_from_thread(self._compiled, budget, result)

    def _compiled(self, budget: int, result: WakeResult) -> None:
        if budget != self.budget:
            return
        self.compiles += 1
        self.result = result
        self.shown_budget = budget
        self._show(result)

    def _show(self, result: WakeResult) -> None:
        self.query_one("#usage", Static).update(Text(usage_line(result)))
        shares = self.gm.settings.wake.shares
        self.query_one("#tiers", Static).update(Text("   ".join(
            f"tier {t.tier} ({shares[t.tier]:.0%}): {t.tokens} tokens, {t.included} in, {t.excluded} out"
            for t in tier_use(result)
        )))
        self.query_one("#wake-text", Static).update(literal(result.text.rstrip("\n") or "(empty)"))
        table = self.query_one("#assembly", DataTable)
        table.clear()
        for e in result.assembly:
            outcome = "included" if e.included and not e.reason else (
                f"included: {e.reason}" if e.included else f"excluded: {e.reason}")
            table.add_row(
                Text(str(e.tier)), literal(e.memory_id), Text(str(e.tokens), justify="right"),
                Text("-" if e.salience is None else f"{e.salience:.3f}", justify="right"),
                Text(outcome, style="green" if e.included else "yellow"),
            )

    @on(Input.Changed, "#budget")
    def _budget_changed(self, event: Input.Changed) -> None:
        if not event.value:
            self.query_one("#usage", Static).update(Text("type a token budget (0 = unbounded)"))
            return
        if event.validation_result is not None and not event.validation_result.is_valid:
            return
        if not event.value.isascii() or not event.value.isdigit():
            return  # int() would read "1_0" or "+5"; the field's digits are the budget
        budget = int(event.value)
        if budget == self.budget:
            return
        self.budget = budget
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(DEBOUNCE_S, self.compile, name="wake-budget")

    def on_ref_moved(self, message: RefMoved) -> None:
        """Another write: recompile (on a new handle, so that it reads the new tip)."""
        self._worker_gm = None
        self.compile()

    def action_close(self) -> None:
        """Back to the browse screen."""
        self.dismiss(None)
