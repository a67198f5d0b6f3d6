"""Recall in a real repository: hits show when they were observed; the date is indexed too."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from gitmem.api import Gitmem
from gitmem.cache import cache_dir
from gitmem.context.recall import RecallIndex
from gitmem.store import Store
from tests.conftest import cache_glob, tur

MAY = datetime(2023, 5, 7, 13, 56, 42, tzinfo=UTC)
JUNE = datetime(2023, 6, 20, 9, 5, tzinfo=UTC)


def learned(repo) -> tuple[str, str]:
    gm = Gitmem.open(repo)
    may = gm.learn("Caroline went to the LGBTQ support group", now=MAY).memory.id
    june = gm.learn("Caroline gave a talk at the school about the support group", now=JUNE).memory.id
    return may, june


def test_recall_shows_the_observed_date_and_time_to_the_minute(repo):
    may, june = learned(repo)
    for _ in range(2):  # cold (records parsed), then warm (cache views)
        code, out, err = tur(repo, "recall", "--query", "When did Caroline go to the support group?")
        assert code == 0, err
        assert (f"> - [{may}] Caroline went to the LGBTQ support group "
                "(Observed 2023-05-07 13:56 UTC, Conf: 1.0)\n") in out
        assert "(Observed 2023-06-20 09:05 UTC, Conf: 1.0)" in out
        _, plain, _ = tur(repo, "recall", "--query", "support group", "--format", "plain")
        assert f"- [{june}] Caroline gave a talk at the school about the support group " \
               "(Observed 2023-06-20 09:05 UTC, Conf: 1.0)\n" in plain
        _, text, _ = tur(repo, "recall", "--query", "support group", "--format", "json")
        observed = {h["id"]: h["observed_at"] for h in json.loads(text)["hits"]}
        assert observed == {may: "2023-05-07T13:56:42Z", june: "2023-06-20T09:05:00Z"}
    code, out, _ = tur(repo, "hook", "pre-turn", stdin=json.dumps({"prompt": "the LGBTQ group"}))
    assert code == 0 and "(Observed 2023-05-07 13:56 UTC, Conf: 1.0)" in out


def test_recall_finds_memories_by_the_month_they_were_observed(repo):
    may, june = learned(repo)
    for _ in range(2):
        hits = Gitmem.open(repo).recall("What did Caroline do about the group in June 2023?")[0].hits
        assert [h.memory.id for h in hits] == [june, may]
        hits = Gitmem.open(repo).recall("Caroline's group in May")[0].hits
        assert [h.memory.id for h in hits] == [may, june]


def test_a_recall_index_of_another_analysis_is_never_used(repo, monkeypatch):
    may, june = learned(repo)
    query = "support group in May"
    first = Gitmem.open(repo).recall(query)[0]
    directory = cache_dir(Store.discover(repo))
    before = {e.key for e in cache_glob(directory, "recall")}
    assert len(before) == 1
    # A new analysis (e.g. another stemmer version) must key its index elsewhere.
    monkeypatch.setattr(RecallIndex, "VERSION", RecallIndex.VERSION + "+other-stemmer")
    again, skipped = Gitmem.open(repo).recall(query)
    after = {e.key for e in cache_glob(directory, "recall")}
    assert len(after - before) == 1 and skipped == []
    assert [h.memory.id for h in again.hits] == [h.memory.id for h in first.hits] == [may, june]


def test_the_time_goes_into_the_metadata_even_when_the_content_quotes_it():
    from gitmem.context.entry import format_hits as render_hits
    from gitmem.context.recall import recall
    from gitmem.record.models import Memory

    quoted = "queue notes (Observed 2026-08-27, Conf: 0.95) copied here"
    memory = Memory(id="fact-00000001", type="fact", content=quoted, confidence=0.95,
                    provenance={"observed_at": datetime(2026, 8, 27, 23, 59, 59, tzinfo=UTC)},
                    decay={"last_verified_at": datetime(2026, 8, 28, tzinfo=UTC),
                           "staleness_status": "stale", "reason": "(Observed 2026-08-27, x)"})
    legacy = Memory(id="fact-00000002", type="fact", content="queue notes without provenance")
    hits = recall([memory, legacy], "queue notes", include_stale=True).hits
    assert sorted(render_hits(hits, "plain").splitlines()) == [
        f"- [fact-00000001] {quoted} (Observed 2026-08-27 23:59 UTC, Conf: 0.95)"
        " (STALE: (Observed 2026-08-27, x))",
        "- [fact-00000002] queue notes without provenance (Conf: 1.0) (UNANCHORED)"]
