"""Merging two versions of one record edited on both sides: field by field, the later change.

Rule 4 of :mod:`gitmem.sharing.sync`'s merge. Symmetric and deterministic: both clones that
merge the same two versions write the same record.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from gitmem.record.models import Memory, Status

__all__ = ["FieldDecision", "merge_records"]

_MISSING: Any = object()
_STAMPS = ("updated_at", "updated_by", "changed_at")


def _canonical(value: Any) -> str:
    return json.dumps(None if value is _MISSING else value, sort_keys=True, ensure_ascii=False)


def _later_side(field_name: str, ours: Memory, theirs: Memory, ov: Any, tv: Any) -> bool:
    """Whether ours' change of ``field_name`` is the later one (ties: a stated total order).

    Compared: the change's time (:meth:`gitmem.record.models.Memory.field_time`), then who made it
    (``updated_by``, as text), then the value itself (canonical JSON): the same on both
    clones, so both merge alike.
    """
    mine = (ours.field_time(field_name), ours.updated_by or "", _canonical(ov))
    other = (theirs.field_time(field_name), theirs.updated_by or "", _canonical(tv))
    return mine >= other


def _union_relations(first: list[dict], second: list[dict]) -> list[dict]:
    seen = {(r.get("type"), r.get("target")) for r in first}
    extra = [r for r in second if (r.get("type"), r.get("target")) not in seen]
    return [*first, *extra]


@dataclass(frozen=True)
class FieldDecision:
    """One field changed on both sides of a merge, and the side whose change was kept.

    ``kept`` is ``"ours"`` or ``"theirs"``; ``at`` and ``by`` describe the kept change.
    The lost value stays in the ref's history (the losing side's commit is a parent).
    """

    field: str
    kept: str
    at: datetime
    by: str | None


def merge_records(
    base: Memory | None, ours: Memory, theirs: Memory, ours_blob: str = "", theirs_blob: str = ""
) -> tuple[Memory, bool, list[FieldDecision]]:
    """Merge two versions of one record edited on both sides (rule 4 of the module docstring).

    Per field (:data:`gitmem.record.models.STAMPED_FIELDS` and any unknown key): changed on one
    side only → that side's value; changed on both sides to different values → the later
    change (:func:`_later_side`). ``relations`` are the union. A refutation present on one
    side only is kept unless the other side removed it (``tur refute --undo``: its base had
    one); with no base, it is always kept. ``updated_at``/``updated_by`` come from the side
    changed last, and ``changed_at`` holds the later time of each field.

    Args:
        base: the version at the merge base, ``None`` when added on both sides.
        ours: the local version.
        theirs: the remote version.
        ours_blob: blob id of ``ours`` (kept for callers; the rule does not use it).
        theirs_blob: blob id of ``theirs``.

    Returns:
        ``(merged, ours_is_later, decisions)``: ``ours_is_later`` says whose YAML the merged
        record is written onto (the side changed last); ``decisions`` names each field
        changed on both sides and the side kept. Symmetric: swapping the sides gives the
        same record.
    """
    b = base.model_dump(mode="json") if base is not None else {}
    o, t = ours.model_dump(mode="json"), theirs.model_dump(mode="json")
    ours_later = ((ours.updated_at or ours.field_time(""), ours.updated_by or "", _canonical(o))
                  >= (theirs.updated_at or theirs.field_time(""), theirs.updated_by or "", _canonical(t)))
    win, lose = (o, t) if ours_later else (t, o)
    merged: dict[str, Any] = {}
    decisions: list[FieldDecision] = []
    value: Any
    for key in [*win, *(k for k in lose if k not in win)]:
        if key in _STAMPS:
            continue
        bv, ov, tv = b.get(key, _MISSING), o.get(key, _MISSING), t.get(key, _MISSING)
        if key == "relations":
            value = _union_relations(win.get(key) or [], lose.get(key) or [])
        elif key == "refutation" and (ov in (None, _MISSING)) != (tv in (None, _MISSING)) and (
                base is None or bv in (None, _MISSING)):
            value = ov if ov not in (None, _MISSING) else tv  # a refutation is never undone by a merge
        elif ov in (tv, bv):
            value = tv
        elif tv == bv:
            value = ov
        else:
            ours_kept = _later_side(key, ours, theirs, ov, tv)
            value = ov if ours_kept else tv
            kept = ours if ours_kept else theirs
            decisions.append(FieldDecision(key, "ours" if ours_kept else "theirs", kept.field_time(key),
                                           kept.updated_by))
        if value is not _MISSING:
            merged[key] = value
    later, earlier = (ours, theirs) if ours_later else (theirs, ours)
    merged["updated_at"] = (later.updated_at or earlier.updated_at)
    merged["updated_by"] = later.updated_by if later.updated_at else earlier.updated_by
    times: dict[str, datetime] = {}
    for side in (ours, theirs):
        for name, when in (side.changed_at or {}).items():
            times[name] = max(when, times.get(name, when))
    merged["changed_at"] = times or None
    _settle_status(merged)
    try:
        return Memory.model_validate(merged), ours_later, decisions
    except ValueError:
        # Fields from two versions that do not validate together: the later record whole,
        # relations unioned, a refutation kept.
        fallback = win | {"relations": merged.get("relations", []), "refutation": merged.get("refutation")}
        _settle_status(fallback)
        lost = FieldDecision("record", "ours" if ours_later else "theirs", later.updated_at or
                             later.field_time(""), later.updated_by)
        return Memory.model_validate(fallback), ours_later, [*decisions, lost]


def _settle_status(record: dict[str, Any]) -> None:
    """Make ``decay.staleness_status`` agree with the merged refutation."""
    decay = record.get("decay")
    if not isinstance(decay, dict):
        return
    if record.get("refutation"):
        record["decay"] = {**decay, "staleness_status": Status.REFUTED.value}
    elif decay.get("staleness_status") == Status.REFUTED.value:
        # The refutation was withdrawn on one side while the other kept an older decay block.
        record["decay"] = {**decay, "staleness_status": Status.STALE.value,
                           "reason": "refutation withdrawn; `tur verify` checks it again"}
