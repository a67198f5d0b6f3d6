"""End to end on the queue-service fixture: learn at the first commit, verify at HEAD, known answers."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from gitmem.api import Gitmem
from gitmem.record.models import Status

ROOT = Path(__file__).resolve().parent.parent


def _builder():
    spec = importlib.util.spec_from_file_location(
        "build_fixture", ROOT / "fixtures" / "repos" / "build_fixture.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["build_fixture"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


BUILDER = _builder()


@pytest.fixture(scope="module")
def verified(tmp_path_factory):
    """The fixture repository with every EXPECTATIONS memory learned at `initial`, verified at HEAD."""
    fixture = BUILDER.build(tmp_path_factory.mktemp("fx") / "queue-service")
    repo = fixture.path
    subprocess.run(["git", "checkout", "-q", fixture.commits["initial"]], cwd=repo, check=True)
    gm = Gitmem.open(repo)
    ids = {}
    for e in BUILDER.EXPECTATIONS:
        ids[e.key] = gm.learn(e.content, type=e.type, file=e.anchor, confidence=e.confidence).memory.id
    subprocess.run(["git", "checkout", "-q", "main"], cwd=repo, check=True)
    gm = Gitmem.open(repo)
    outcome = gm.verify()
    return gm, ids, {r.memory_id: r for r in outcome.rows}, outcome


@pytest.mark.parametrize("expectation", BUILDER.EXPECTATIONS, ids=lambda e: e.key)
def test_verify_at_head_gives_the_known_status_reason_and_range(verified, expectation):
    gm, ids, rows, _ = verified
    row = rows[ids[expectation.key]]
    assert row.status.value == expectation.status
    stored = gm.get(ids[expectation.key])
    if expectation.status == "stale":
        assert expectation.reason in row.reason
        assert stored.decay.staleness_status is Status.STALE
    if expectation.anchor_at_head:
        assert stored.provenance.context_ref == expectation.anchor_at_head
        # Corroborated at HEAD: by a rewrite when the anchor moved, else by the run record.
        assert gm.verification_point(ids[expectation.key])[0] == BUILDER.HEAD_SHA


def test_stale_reasons_name_the_commit_that_changed_the_lines(verified):
    gm, ids, rows, _ = verified
    short = {name: sha[:7] for name, sha in _commits(gm).items()}
    assert rows[ids["port"]].reason == f"line 3 changed in {short['port_change']}"
    assert rows[ids["jwt"]].reason == f"lines 13-17 changed in {short['auth_oauth']}"
    assert rows[ids["legacy_export"]].reason == f"deleted in {short['drop_legacy_export']}"


def _commits(gm) -> dict[str, str]:
    log = subprocess.run(["git", "log", "--reverse", "--format=%H"], cwd=gm.store.workdir,
                         capture_output=True, text=True, check=True).stdout.split()
    return {step.name: sha for step, sha in zip(BUILDER.STEPS, log, strict=True)}


def test_verify_records_everything_in_one_commit_and_a_second_run_changes_nothing(verified):
    gm, _, _, outcome = verified
    assert outcome.commit is not None
    message = gm.store.log(limit=1)[0].message
    assert message.startswith("verify: ")
    again = gm.verify()
    assert again.commit is None
    assert len(again.rows) == len(outcome.rows) > 0
    assert all(not r.changed for r in again.rows)


def test_wake_leaves_out_stale_memories_with_their_reason(verified):
    gm, ids, _, _ = verified
    result, _ = gm.wake(token_budget=0)
    reasons = {e.memory_id: e.reason for e in result.assembly}
    for key in ("port", "jwt", "legacy_export", "readme"):
        assert reasons[ids[key]] == "stale"
        assert ids[key] not in result.text
    for key in ("wal", "retry", "type_hints"):
        assert ids[key] in result.text


def test_records_written_by_verify_are_cached_for_the_next_reader(tmp_path, monkeypatch):
    fixture = BUILDER.build(tmp_path / "queue-service")
    repo = fixture.path
    subprocess.run(["git", "checkout", "-q", fixture.commits["initial"]], cwd=repo, check=True)
    gm = Gitmem.open(repo)
    for e in BUILDER.EXPECTATIONS:
        gm.learn(e.content, type=e.type, file=e.anchor, confidence=e.confidence)
    subprocess.run(["git", "checkout", "-q", "main"], cwd=repo, check=True)
    outcome = Gitmem.open(repo).verify()
    assert outcome.commit is not None

    import gitmem.cache.records

    def refuse(*args):
        raise AssertionError("a record written by verify was parsed again")

    monkeypatch.setattr(gitmem.cache.records, "parse_record", refuse)
    memories, skipped = Gitmem.open(repo).memories()
    assert skipped == [] and len(memories) == len(BUILDER.EXPECTATIONS)
    assert {m.id: m.status for m in memories} == {r.memory_id: r.status for r in outcome.rows}
