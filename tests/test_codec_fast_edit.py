"""`codec.update`'s line-edit fast path: verify-style edits without ruamel, only the edited lines."""

from __future__ import annotations

from datetime import UTC, datetime

from gitmem.codec import dump_new, load, update
from gitmem.record.models import Status
from tests.conftest import changed_lines

RECORD = b"""\
id: fact-1d1ea25b
type: fact
scope: universal
content: The memory ref moves by compare-and-swap
confidence: 0.9
provenance:
  observed_at: "2026-11-30T04:21:39Z"
  git_sha: "2212d5a20a8aea8190d9418518e5a80bace18550"
  context_ref: gitmem/store/memories.py#L392-L406
  fingerprint: sha256:0f0c
decay:
  half_life_days: 14.0
  last_verified_at: "2026-11-30T04:21:41Z"
  staleness_status: fresh
"""


def no_round_trip(monkeypatch):
    """Make the ruamel round-trip fail, so a test passes only through the line-edit path."""
    from gitmem.codec import write as yaml_writer

    def refuse(*args, **kwargs):
        raise AssertionError("ruamel round-trip used")

    monkeypatch.setattr(yaml_writer, "_rt_yaml", refuse)


def test_corroboration_edits_exactly_the_anchor_lines(monkeypatch):
    no_round_trip(monkeypatch)
    m = load(RECORD, "x")
    m.provenance.git_sha = "0192117aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
    m.provenance.context_ref = "gitmem/store/memories.py#L393-L407"
    m.decay.last_verified_at = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
    out = update(RECORD, m, "x")
    assert load(out, "x") == m
    assert sorted(changed_lines(RECORD, out)) == sorted([
        '-  git_sha: "2212d5a20a8aea8190d9418518e5a80bace18550"',
        '+  git_sha: "0192117aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"',
        "-  context_ref: gitmem/store/memories.py#L392-L406",
        "+  context_ref: gitmem/store/memories.py#L393-L407",
        '-  last_verified_at: "2026-11-30T04:21:41Z"',
        '+  last_verified_at: "2026-12-01T08:00:00Z"',
    ])


def test_going_stale_adds_the_reason_at_the_end_of_decay_and_fresh_removes_it(monkeypatch):
    no_round_trip(monkeypatch)
    m = load(RECORD, "x")
    m.decay.staleness_status = Status.STALE
    m.decay.reason = "no: line 3 changed in c03ed2f"
    stale = update(RECORD, m, "x")
    assert load(stale, "x") == m
    assert changed_lines(RECORD, stale) == [
        "-  staleness_status: fresh",
        "+  staleness_status: stale",
        '+  reason: "no: line 3 changed in c03ed2f"',
    ]
    m.decay.staleness_status = Status.FRESH
    m.decay.reason = None
    assert update(stale, m, "x") == RECORD


def test_an_edit_it_cannot_make_falls_back_to_the_round_trip_and_keeps_comments():
    commented = RECORD.replace(b"confidence: 0.9\n", b"confidence: 0.9  # from review\n")
    m = load(commented, "x")
    m.confidence = 0.5
    m.content = "multi\nline content"
    out = update(commented, m, "x")
    assert load(out, "x") == m
    assert b"# from review" in out


def test_a_new_record_edited_by_both_paths_reads_back_the_same():
    m = load(RECORD, "x")
    fresh = dump_new(m)
    m.provenance.fingerprint = "sha256:beef"
    assert load(update(fresh, m, "x"), "x") == m


def test_a_hand_written_naive_time_is_left_as_written_by_a_status_edit(monkeypatch):
    no_round_trip(monkeypatch)
    naive = RECORD.replace(b'observed_at: "2026-11-30T04:21:39Z"', b"observed_at: 2026-11-30T04:21:39")
    m = load(naive, "x")
    m.decay.staleness_status = Status.STALE
    out = update(naive, m, "x")
    assert load(out, "x") == m
    assert changed_lines(naive, out) == ["-  staleness_status: fresh", "+  staleness_status: stale"]
