"""The detail pane: the memory, its status and provenance, history and anchor trail, diff, record."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from tui.detail import Detail
from tui.text import literal
from tui.widgets.memory_table import STATUS_STYLES

__all__ = ["MemoryDetail"]

_DIFF_STYLES = (("+++", "bold"), ("---", "bold"), ("@@", "cyan"), ("+", "green"), ("-", "red"))


def _field(label: str, value: object) -> Text:
    return Text.assemble((f"{label:<13}", "bold"), literal(str(value), keep_newlines=False))


def _summary(d: Detail) -> Text:
    m, row = d.memory, d.row
    head = Text.assemble(
        (m.id, "bold"), "  ", m.type.value, "  ",
        (row.status, STATUS_STYLES.get(row.status, "")),
        f"  weight {row.weight:.2f}  confidence {m.confidence:.2f}",
    )
    parts = [head, Text(""), literal(m.content), Text("")]
    if row.reason:
        parts.append(_field("reason", row.reason))
    if d.note is not None:
        parts.append(_field("at HEAD", d.note.maps_to or "its lines are gone"))
        parts.append(_field("settle", "t: still true (confirm)  e: edit  r: refute" if d.note.maps_to
                            else "e: edit with a new --file anchor  r: refute"))
    prov = m.provenance
    if prov is not None:
        parts += [
            _field("observed", prov.observed_at.isoformat()),
            _field("git sha", prov.git_sha or "-"),
            _field("anchor", prov.context_ref or "-"),
        ]
        if prov.source_agent or prov.source_harness:
            parts.append(_field("source", f"{prov.source_agent or '-'} / {prov.source_harness or '-'}"))
    if m.decay is not None:
        half = "never decays" if m.decay.half_life_days is None else f"{m.decay.half_life_days:g} days"
        parts += [_field("verified", m.decay.last_verified_at.isoformat()), _field("half-life", half)]
    if m.refutation is not None:
        by = f" by {m.refutation.by}" if m.refutation.by else ""
        parts.append(_field("refuted", f"{m.refutation.at.isoformat()}{by}"))
    for rel in m.relations:
        parts.append(_field(rel.type.value, rel.target))
    if m.visibility:  # a bound memory never reaches a session of another agent
        parts.append(_field("for", ", ".join(m.visibility)))
    return Text("\n").join(parts)


def _history(d: Detail) -> Text:
    lines = [Text("Commits on refs/tur/memories", style="bold underline")]
    for c in d.history:
        subject = c.message.splitlines()[0] if c.message else ""
        lines.append(Text.assemble((c.sha[:10], "yellow"), f" {c.time:%Y-%m-%d %H:%M} ",
                                   literal(subject, keep_newlines=False)))
    if not d.history:
        lines.append(Text("(none)", style="dim"))
    if len(d.trail) > 1:  # the anchor travelled
        lines += [Text(""), Text("How the anchor travelled", style="bold underline")]
        for step in d.trail:
            lines.append(Text.assemble((step.commit[:10], "yellow"), f" {step.time:%Y-%m-%d %H:%M} ",
                                       literal(step.describe(), keep_newlines=False)))
    return Text("\n").join(lines)


def _diff(d: Detail) -> Text:
    sha = d.memory.provenance.git_sha if d.memory.provenance else None
    title = f"Anchored diff since {sha[:12]}" if sha else "Anchored diff"
    lines = [Text(title, style="bold underline")]
    if d.diff.note:
        lines.append(literal(d.diff.note, style="dim", keep_newlines=False))
    for line in d.diff.text.splitlines():
        style = next((s for prefix, s in _DIFF_STYLES if line.startswith(prefix)), "")
        lines.append(literal(line, style=style, keep_newlines=False))
    return Text("\n").join(lines)


class MemoryDetail(VerticalScroll):
    """Four literal-text sections (``#summary``, ``#history``, ``#diff``, ``#record``) for one memory."""

    DEFAULT_CSS = """
    MemoryDetail { width: 1fr; border-left: solid $primary-darken-2; padding: 0 1; }
    MemoryDetail Static { margin-bottom: 1; }
    """

    def compose(self) -> ComposeResult:
        """The sections, empty until :meth:`show`."""
        yield Static(id="summary", markup=False)
        yield Static(id="history", markup=False)
        yield Static(id="diff", markup=False)
        yield Static(id="record", markup=False)

    def show(self, detail: Detail | None, message: str = "no memory selected") -> None:
        """Render ``detail``, or ``message`` when there is none."""
        summary = self.query_one("#summary", Static)
        sections = [self.query_one(f"#{name}", Static) for name in ("history", "diff", "record")]
        if detail is None:
            summary.update(Text(message, style="dim"))
            for s in sections:
                s.update("")
            return
        summary.update(_summary(detail))
        sections[0].update(_history(detail))
        sections[1].update(_diff(detail))
        sections[2].update(Text.assemble(("Record as stored\n", "bold underline"),
                                         literal(detail.record.rstrip("\n"))))
