"""Text analysis for recall: identifier parts, English stop words, Snowball stems."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from bm25s.stopwords import STOPWORDS_EN_PLUS

from gitmem.context.analysis import STOPWORDS, VERSION, identifier_parts, stem, tokenize, words
from gitmem.context.recall import RecallIndex, rank_memories, recall
from gitmem.record.models import Memory

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(("text", "terms"), [
    ("busy_timeout", ["busi", "timeout"]),
    ("RecordCache", ["record", "cach"]),
    ("recordCache", ["record", "cach"]),
    ("HTTPServer", ["http", "server"]),
    ("parse_record()", ["pars", "record"]),
    ("src/auth/jwt_tokens.py", ["src", "auth", "jwt", "token", "py"]),
    ("gitmem/recall.py#L10-L20", ["gitmem", "recal", "py", "l", "10", "l", "20"]),
    ("utf8 and sha256", ["utf", "8", "sha", "256"]),
    ("MAX_QUERY_CHARS", ["max", "queri", "char"]),
])
def test_identifiers_split_into_the_words_they_are_made_of(text, terms):
    assert tokenize(text) == terms


def test_an_identifier_and_its_words_meet_in_recall():
    memories = [
        Memory(id="fact-00000001", type="fact", content="RecordCache keeps parsed records per tree."),
        Memory(id="fact-00000002", type="fact", content="busy_timeout is 5000 ms in src/db/sqlite_queue.py"),
        Memory(id="fact-00000003", type="fact", content="The frontend is built with Vite."),
    ]
    assert [h.memory.id for h in recall(memories, "record cache").hits][:1] == ["fact-00000001"]
    assert [h.memory.id for h in recall(memories, "the busy timeout").hits][:1] == ["fact-00000002"]
    assert [h.memory.id for h in recall(memories, "sqlite_queue.py").hits][:1] == ["fact-00000002"]
    assert [h.memory.id for h in recall(memories, "recordCaches").hits][:1] == ["fact-00000001"]


def test_english_stop_words_are_dropped():
    # Pronouns, auxiliaries and contraction pieces, which the old built-in list kept.
    assert tokenize("She would have been going to the meetings with them") == ["go", "meet"]
    assert tokenize("I'm sure he's done it, hasn't he? They'll see") == ["sure", "done", "see"]
    assert tokenize("the of and") == []


def test_the_stop_list_is_nltks_english_list_as_bm25s_ships_it():
    assert frozenset(STOPWORDS_EN_PLUS) <= STOPWORDS
    assert STOPWORDS - frozenset(STOPWORDS_EN_PLUS) == {"could", "would"}
    # Content words of code memories are never stop words.
    assert not {"cache", "index", "test", "system", "value", "may", "file"} & STOPWORDS


@pytest.mark.parametrize(("word_forms", "common"), [
    (["caching", "caches", "cached", "cache"], "cach"),
    (["memories", "memory"], "memori"),
    (["adopted", "adoption", "adopting"], "adopt"),
    (["running", "runs", "run"], "run"),
    (["painting", "paintings", "painted"], "paint"),
])
def test_word_forms_meet_at_their_snowball_stem(word_forms, common):
    assert {stem(w) for w in word_forms} == {common}
    assert {t for w in word_forms for t in tokenize(w)} == {common}


def test_words_and_parts_keep_their_case_and_unicode_letters():
    assert words("Ünïcode façade: naïve_café/x.py") == ["Ünïcode", "façade", "naïve", "café", "x", "py"]
    assert identifier_parts("parseHTTPResponse2") == ["parse", "HTTP", "Response", "2"]
    # Case is Unicode's: a non-ASCII letter is no border (the old ASCII rule cut "fa|çade").
    assert tokenize("Ünïcode FAÇADE naïve cafés") == ["ünïcode", "façad", "naïv", "café"]
    assert identifier_parts("ÄÖÜber") == ["ÄÖ", "Über"]


def test_the_analysis_version_names_the_stemmer():
    import Stemmer

    assert Stemmer.version() in VERSION
    assert VERSION in RecallIndex.VERSION


def test_importing_the_analysis_loads_neither_bm25s_nor_numpy():
    probe = ("import sys, gitmem.context.analysis as a; a.tokenize('warm up the stemmer');"
             "print(sorted(m for m in ('bm25s', 'numpy') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", probe], env=dict(os.environ, PYTHONPATH=str(ROOT)),
                          capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]"


def test_an_index_of_another_analysis_version_is_refused():
    index = RecallIndex.build(["alpha beta", "gamma"])
    payload = index.to_payload()
    assert RecallIndex.from_payload(payload, 2).bm25_scores("alpha") == index.bm25_scores("alpha")
    with pytest.raises(ValueError, match="another version"):
        RecallIndex.from_payload({**payload, "version": "words1-porter-1"}, 2)
    with pytest.raises(ValueError, match="another version"):
        RecallIndex.from_payload({k: v for k, v in payload.items() if k != "version"}, 2)


def test_the_observation_month_and_year_are_indexed():
    may = Memory(id="fact-00000001", type="fact", content="We decided to move the queue to Postgres.",
                 provenance={"observed_at": "2023-05-08T13:56:00Z"})
    june = Memory(id="fact-00000002", type="fact", content="We decided to move the cache to Redis.",
                  provenance={"observed_at": "2023-06-20T09:00:00Z"})
    legacy = Memory(id="fact-00000003", type="fact", content="We decided to keep SQLite.")
    hits = rank_memories("what did we decide in May 2023?", [june, may, legacy])
    assert [h.memory.id for h in hits][:1] == ["fact-00000001"]
    hits = rank_memories("what did we decide in june", [june, may, legacy])
    assert [h.memory.id for h in hits][:1] == ["fact-00000002"]
