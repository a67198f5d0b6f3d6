"""Tests of the YAML codec: canonical writing, lossless round-trips, safe reading."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from gitmem.codec import MAX_RECORD_BYTES, dump_new, load, load_mapping, update
from gitmem.codec import write as yaml_writer
from gitmem.codec.scalars import FIRST_CHARACTERS, needs_quotes
from gitmem.errors import MalformedRecord
from gitmem.record.models import Decay, Memory, Provenance, Refutation, Relation, Status
from tests.conftest import changed_lines

WHERE = "blob 3f2a1b9 (memories/ab/fact-ab12cd34.yaml)"
SHA = "9f83ab2c104e9f83ab2c104e9f83ab2c104e0000"
T0 = datetime(2026, 8, 27, 15, 0, tzinfo=UTC)
T1 = datetime(2026, 9, 1, 8, 30, 5, tzinfo=UTC)


def full_memory(**changes) -> Memory:
    fields = dict(
        id="fact-ab12cd34",
        type="fact",
        scope="incarnation",
        content="SQLite signal queue uses WAL mode and busy_timeout=5000ms.",
        confidence=0.95,
        provenance=Provenance(
            observed_at=T0,
            git_sha=SHA,
            source_agent="copilot-chuck",
            source_harness="github-copilot",
            context_ref="src/tur/signals.py#L45-L60",
            fingerprint="sha256:00ff",
        ),
        decay=Decay(half_life_days=14, last_verified_at=T0, staleness_status="fresh"),
        relations=[Relation(type="supports", target="fact-11223344")],
    )
    fields.update(changes)
    return Memory(**fields)


# --- writing ------------------------------------------------------------------


def test_dump_new_writes_canonical_order_and_quoted_utc_timestamps():
    memory = full_memory(
        refutation=Refutation(reason="queue moved to redis", by="ada", at=T1), x_team="core"
    )
    assert dump_new(memory).decode() == (
        "id: fact-ab12cd34\n"
        "type: fact\n"
        "scope: incarnation\n"
        "content: SQLite signal queue uses WAL mode and busy_timeout=5000ms.\n"
        "confidence: 0.95\n"
        "provenance:\n"
        '  observed_at: "2026-08-27T15:00:00Z"\n'
        f'  git_sha: "{SHA}"\n'
        "  source_agent: copilot-chuck\n"
        "  source_harness: github-copilot\n"
        "  context_ref: src/tur/signals.py#L45-L60\n"
        "  fingerprint: sha256:00ff\n"
        "decay:\n"
        "  half_life_days: 14.0\n"
        '  last_verified_at: "2026-08-27T15:00:00Z"\n'
        "  staleness_status: fresh\n"
        "relations:\n"
        "  - type: supports\n"
        "    target: fact-11223344\n"
        "refutation:\n"
        "  reason: queue moved to redis\n"
        "  by: ada\n"
        '  at: "2026-09-01T08:30:05Z"\n'
        "x_team: core\n"
    )


def test_dump_new_omits_none_values_and_empty_relations():
    memory = Memory(id="axiom-00000001", type="axiom", content="Tests run against real git.")
    assert dump_new(memory) == (
        b"id: axiom-00000001\ntype: axiom\nscope: universal\n"
        b"content: Tests run against real git.\nconfidence: 1.0\n"
    )


def test_load_reads_timestamps_back_as_aware_utc_datetimes():
    memory = load(dump_new(full_memory()), WHERE)
    assert memory.provenance.observed_at == T0
    assert memory.provenance.observed_at.tzinfo is UTC
    assert memory.decay.last_verified_at == T0


def test_load_reads_hand_written_offset_and_unquoted_timestamps_as_utc():
    data = (
        b"id: fact-ab12cd34\ntype: fact\ncontent: x\n"
        b"provenance:\n  observed_at: 2026-08-27 17:00:00+02:00\n"
    )
    assert load(data, WHERE).provenance.observed_at == T0


def test_dump_then_load_returns_an_equal_memory_with_extras():
    memory = full_memory(
        refutation=Refutation(reason="r", at=T1),
        x_list=[1, "2", None, {"yes": "no"}],
        x_map={"when": "2024-01-02", "n": 0.5},
    )
    assert load(dump_new(memory), WHERE) == memory


# --- strings YAML would retype ------------------------------------------------

RETYPED = [
    "no", "No", "NO", "on", "yes", "off", "y", "n", "true", "False", "~", "null", "Null", "",
    "0x10", "0o17", "017", "1e3", "1E3", "+1", "-2.5", ".5", "1_000", "2024-01-02",
    "2024-01-02 12:30:00", "2001-12-14t21:59:43.10-05:00", "12:30:00", "190:20:30",
    ".inf", "-.inf", ".NaN", "=", "<<", "0192117", "12e4567", "0b101",
]


def read_with_every_yaml_reader(data: bytes) -> list[dict]:
    readers = [
        yaml.safe_load(data), yaml.load(data, Loader=yaml.SafeLoader), load_mapping(data, WHERE)
    ]
    for version in ("1.1", "1.2"):
        reader = YAML(typ="safe", pure=True)
        reader.version = version
        readers.append(reader.load(data))
    return readers


@pytest.mark.parametrize("text", RETYPED)
def test_strings_that_yaml_would_retype_survive_in_content_and_agent_names(text):
    memory = full_memory(
        content=f"value {text}",
        provenance=Provenance(observed_at=T0, source_agent=text, source_harness=text),
        x_value=text,
    )
    data = dump_new(memory)
    assert load(data, WHERE) == memory
    for mapping in read_with_every_yaml_reader(data):
        assert mapping["provenance"]["source_agent"] == text
        assert mapping["x_value"] == text


@pytest.mark.parametrize("text", [t for t in RETYPED if t.strip()])
def test_content_that_yaml_would_retype_is_quoted(text):
    data = dump_new(full_memory(content=text))
    assert f"content: {text}\n".encode() not in data
    for mapping in read_with_every_yaml_reader(data):
        assert mapping["content"] == text


@pytest.mark.parametrize("sha", ["0192117", "12e4567", "1234567", "abcdef0", SHA])
def test_git_sha_is_always_double_quoted(sha):
    data = dump_new(full_memory(provenance=Provenance(observed_at=T0, git_sha=sha)))
    assert f'  git_sha: "{sha}"\n'.encode() in data
    assert load(data, WHERE).provenance.git_sha == sha


# --- lossless content -----------------------------------------------------------

AWKWARD_CONTENT = [
    "\x1b[31mred\x1b[0m text",
    "bell\x07 nul\x00 del\x7f c1\x9f",
    "tab\tseparated\tvalues",
    "trailing spaces   ",
    "   leading and trailing   ",
    "\n starts with a newline",
    "line one\nline two",
    "line one\nline two\n",
    "line one\nline two\n\n\n",
    "line one\n\n\nline three",
    "line one   \nline two",
    "line one\n  indented two\n\tthird",
    "windows\r\nline ends\r\n",
    "unicode breaks\u2028line\u2029para\x85nel",
    "bom\ufeff and non-characters \ufffe\uffff",
    "ünïcödé ✓ 日本語 😀 \U0001F600",
    "[bold]markup[/bold] and list[int] and {braces}",
    "# leading hash",
    "- leading dash",
    "key: value inside",
    "ends with colon:",
    "'single' and \"double\" quotes \\ backslash",
    "& anchor * alias ! tag | pipe > fold % directive @ at ` tick",
    "--- document marker\n...",
    "x" * 5000 + " long line without folding " + "y" * 5000,
    "\x08control first\nsecond line",
    "\u00e9first\n\u00e9second\n",
]


@pytest.mark.parametrize("content", AWKWARD_CONTENT)
def test_awkward_content_reads_back_identical(content):
    memory = full_memory(content=content)
    data = dump_new(memory)
    assert load(data, WHERE).content == content
    assert load_mapping(update(data, memory), WHERE)["content"] == content
    for mapping in read_with_every_yaml_reader(data):
        assert mapping["content"] == content


def test_long_content_is_written_on_one_line():
    content = "word " * 2000 + "end"
    data = dump_new(full_memory(content=content))
    assert f"content: {content}\n".encode() in data


@pytest.mark.parametrize(
    ("content", "header"),
    [("a\nb", "|-"), ("a\nb\n", "|"), ("a\nb\n\n", "|+")],
)
def test_plain_multi_line_content_uses_a_literal_block(content, header):
    data = dump_new(full_memory(content=content))
    assert f"content: {header}\n".encode() in data
    assert load(data, WHERE).content == content


# --- read-modify-write ----------------------------------------------------------

HAND_WRITTEN = b"""\
# Written by hand; keep this header.
id: "fact-ab12cd34"
type: "fact"               # axiom | fact | insight | preference | core
scope: "incarnation"       # universal | incarnation
content: "SQLite signal queue uses WAL mode and busy_timeout=5000ms."
confidence: 0.95           # Float in [0.0, 1.0]
x_owner: platform-team

# Provenance Anchors
provenance:
  observed_at: "2026-08-27T15:00:00Z"
  git_sha: "9f83ab2c104e"
  source_agent: "copilot-chuck"
  x_host: {name: ci-7, cores: 8}
  source_harness: "github-copilot"
  context_ref: "src/tur/signals.py#L45-L60"

# Decay Configuration
decay:
  half_life_days: 14       # None for non-decaying types (axiom/core)
  last_verified_at: "2026-08-27T15:00:00Z"
  staleness_status: "fresh" # fresh | stale | unanchored | refuted
relations:
- type: supports
  target: fact-11223344
  x_note: kept
x_tail:
  flags: [1_000, 0x1F, 010, yes, 2024-01-02, 1e3]
"""


@pytest.fixture(params=["shortcut", "round-trip"])
def no_change_path(request, monkeypatch):
    """Run a no-change test through update's equality shortcut and through the ruamel merge."""
    if request.param == "round-trip":
        monkeypatch.setattr(yaml_writer, "_unchanged", lambda mapping, memory: False)
    return request.param


def test_update_with_no_change_returns_identical_bytes(no_change_path):
    assert update(HAND_WRITTEN, load(HAND_WRITTEN, WHERE), WHERE) == HAND_WRITTEN
    fresh = dump_new(full_memory(x_extra={"a": None, "b": [1, 2]}))
    assert update(fresh, load(fresh, WHERE)) == fresh


def test_update_does_not_write_defaults_a_record_leaves_out(no_change_path):
    minimal = (
        b"id: fact-ab12cd34\ntype: fact\ncontent: x\nrelations: []\nrefutation:\n"
        b"decay:\n  half_life_days: 14\n  last_verified_at: 2026-08-27 17:00:00+02:00\n"
    )
    assert update(minimal, load(minimal, WHERE)) == minimal


def test_update_of_confidence_changes_exactly_one_line_and_keeps_comments():
    memory = load(HAND_WRITTEN, WHERE)
    memory.confidence = 0.5
    after = update(HAND_WRITTEN, memory, WHERE)
    assert changed_lines(HAND_WRITTEN, after) == [
        "-confidence: 0.95           # Float in [0.0, 1.0]",
        "+confidence: 0.5            # Float in [0.0, 1.0]",
    ]


def test_update_keeps_unknown_keys_top_level_and_nested():
    memory = load(HAND_WRITTEN, WHERE)
    memory.decay.staleness_status = Status.STALE
    memory.decay.reason = "lines 45-60 changed in 3f2a1b9"
    after = update(HAND_WRITTEN, memory, WHERE)
    assert changed_lines(HAND_WRITTEN, after) == [
        '-  staleness_status: "fresh" # fresh | stale | unanchored | refuted',
        '+  staleness_status: "stale" # fresh | stale | unanchored | refuted',
        "+  reason: lines 45-60 changed in 3f2a1b9",
    ]
    mapping = load_mapping(after, WHERE)
    assert mapping["x_owner"] == "platform-team"
    assert mapping["provenance"]["x_host"] == {"name": "ci-7", "cores": 8}
    assert mapping["relations"][0]["x_note"] == "kept"
    assert mapping["x_tail"] == {"flags": ["1_000", 31, 10, "yes", "2024-01-02", 1000.0]}


def test_update_inserts_a_new_nested_key_before_the_comment_of_the_next_block():
    memory = load(HAND_WRITTEN, WHERE)
    memory.provenance.fingerprint = "sha256:abcd"
    after = update(HAND_WRITTEN, memory, WHERE)
    assert changed_lines(HAND_WRITTEN, after) == ["+  fingerprint: sha256:abcd"]
    expected = b'  context_ref: "src/tur/signals.py#L45-L60"\n  fingerprint: sha256:abcd\n\n# Decay'
    assert expected in after


def test_update_adds_then_clears_refutation():
    original = dump_new(full_memory())
    refuted = load(original, WHERE)
    refuted.refutation = Refutation(reason="moved to redis", by="ada", at=T1)
    after = update(original, refuted)
    assert changed_lines(original, after) == [
        "+refutation:",
        "+  reason: moved to redis",
        "+  by: ada",
        '+  at: "2026-09-01T08:30:05Z"',
    ]
    cleared = load(after, WHERE)
    cleared.refutation = None
    assert update(after, cleared) == original


def test_update_deleting_a_key_keeps_the_comment_before_the_next_block():
    memory = load(HAND_WRITTEN, WHERE)
    memory.provenance.context_ref = None
    after = update(HAND_WRITTEN, memory, WHERE)
    assert changed_lines(HAND_WRITTEN, after) == [
        '-  context_ref: "src/tur/signals.py#L45-L60"'
    ]


def test_update_writes_changed_git_sha_and_timestamps_quoted():
    memory = load(HAND_WRITTEN, WHERE)
    memory.provenance.git_sha = "0192117"
    memory.decay.last_verified_at = T1
    after = update(HAND_WRITTEN, memory, WHERE)
    assert changed_lines(HAND_WRITTEN, after) == [
        '-  git_sha: "9f83ab2c104e"',
        '+  git_sha: "0192117"',
        '-  last_verified_at: "2026-08-27T15:00:00Z"',
        '+  last_verified_at: "2026-09-01T08:30:05Z"',
    ]


def test_update_appends_a_relation_in_the_original_sequence_indentation():
    memory = load(HAND_WRITTEN, WHERE)
    memory.relations.append(Relation(type="refines", target="insight-00000002"))
    after = update(HAND_WRITTEN, memory, WHERE)
    assert changed_lines(HAND_WRITTEN, after) == [
        "+- type: refines",
        "+  target: insight-00000002",
    ]


FOUR_SPACES = b"""\
id: fact-ab12cd34
type: fact
content: indented by four
provenance:
    observed_at: "2026-08-27T15:00:00Z"
    source_agent: ada
relations:
    -   type: supports
        target: fact-11223344
"""


def test_update_keeps_four_space_indentation():
    memory = load(FOUR_SPACES, WHERE)
    memory.provenance.source_agent = "bob"
    memory.relations.append(Relation(type="refines", target="fact-00000002"))
    assert changed_lines(FOUR_SPACES, update(FOUR_SPACES, memory, WHERE)) == [
        "-    source_agent: ada",
        "+    source_agent: bob",
        "+    -   type: refines",
        "+        target: fact-00000002",
    ]


@pytest.mark.parametrize("value", [5e-324, 2.225073858507e-311, 1e-05, 0.1 + 0.2, 1e300])
def test_floats_are_written_exactly_and_stay_floats_for_yaml_1_1(value):
    memory = full_memory(confidence=min(value, 1.0), x_float=value, x_list=[value])
    data = dump_new(memory)
    assert load(data, WHERE) == memory
    assert yaml.safe_load(data)["x_float"] == value
    edited = load(data, WHERE)
    edited.content = "edited"
    assert load(update(data, edited), WHERE) == edited


def test_update_does_not_refold_long_strings():
    original = dump_new(full_memory(content="word " * 400 + "end"))
    memory = load(original, WHERE)
    memory.confidence = 0.25
    assert changed_lines(original, update(original, memory)) == [
        "-confidence: 0.95",
        "+confidence: 0.25",
    ]


def test_update_of_content_to_multi_line_and_back():
    original = dump_new(full_memory())
    memory = load(original, WHERE)
    memory.content = "first\nsecond\n"
    multi = update(original, memory)
    assert load(multi, WHERE).content == "first\nsecond\n"
    memory.content = full_memory().content
    assert update(multi, memory) == original


def test_update_refuses_a_malformed_original():
    with pytest.raises(MalformedRecord, match="malformed record blob 3f2a1b9"):
        update(b"id: [unclosed\n", full_memory(), WHERE)


# --- safe reading -----------------------------------------------------------------

VALID = dump_new(full_memory())


@pytest.mark.parametrize(
    "data",
    [
        b"!!python/object/apply:os.system ['echo pwned']\n",
        VALID + b"x: !!python/object/apply:os.system ['echo pwned']\n",
        VALID + b"x: !!python/name:os.system\n",
        VALID + b"x: !!binary aGVsbG8=\n",
        VALID + b"x: !!timestamp 2024-01-02\n",
        VALID + b"x: !!set {a, b}\n",
        VALID + b"x: !local thing\n",
        VALID + b"x: !!omap [a: 1]\n",
    ],
)
def test_load_refuses_non_core_tags(data):
    with pytest.raises(MalformedRecord) as caught:
        load(data, WHERE)
    assert caught.value.where == WHERE
    assert "not allowed" in caught.value.reason


def test_load_accepts_standard_core_tags():
    data = VALID + b"x_tags: [!!str 123, !!int '7', !!float '1', !!bool 'true', !!null '']\n"
    assert load(data, WHERE).model_extra["x_tags"] == ["123", 7, 1.0, True, None]


@pytest.mark.parametrize(
    ("tail", "position"),
    [
        (b"x_a: &anchor hello\nx_b: *anchor\n", "(line 20, column 6)"),
        (b"x_a: &unused hello\n", "(line 20, column 6)"),
        (b"x_a: [1, &a {b: 2}]\n", "(line 20, column 10)"),
    ],
)
def test_load_refuses_anchors_and_aliases_with_a_positioned_reason(tail, position):
    with pytest.raises(MalformedRecord) as caught:
        load(VALID + tail, WHERE)
    assert caught.value.reason == (
        f"anchors and aliases (&name, *name) are not allowed in a record {position}"
    )


def test_load_refuses_an_undefined_alias():
    with pytest.raises(MalformedRecord, match="found undefined alias"):
        load(VALID + b"x_b: *nowhere\n", WHERE)


def test_ampersands_in_text_are_not_anchors():
    data = VALID + b"x_r: R&D & co &amp;\n"
    assert load(data, WHERE).model_extra["x_r"] == "R&D & co &amp;"


def test_load_refuses_a_billion_laughs_alias_bomb_quickly():
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level in range(1, 10):
        refs = ",".join([f"*a{level - 1}"] * 9)
        lines.append(f"a{level}: &a{level} [{refs}]")
    bomb = ("\n".join(lines) + "\n").encode()
    started = time.process_time()  # CPU time: a loaded machine does not stretch it
    with pytest.raises(MalformedRecord, match="anchors and aliases"):
        load_mapping(bomb, WHERE)
    assert time.process_time() - started < 0.2


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"id: a\nid: b\n", "duplicate key 'id' (line 2, column 1)"),
        (b"p:\n  a: 1\n  a: 2\n", "duplicate key 'a' (line 3, column 3)"),
        (b"- a\n- b\n", "top level must be a mapping (line 1, column 1)"),
        (b"just text\n", "top level must be a mapping (line 1, column 1)"),
        (b"", "empty document; a record must be a mapping"),
        (b"# only a comment\n", "empty document; a record must be a mapping"),
        (b"1: one\n", "key 1 is not a string (line 1, column 1)"),
        (b"a: 1\n---\nb: 2\n", "expected a single document in the stream: "
                               "but found another document (line 2, column 1)"),
    ],
)
def test_load_mapping_refuses_bad_structure_naming_where(data, reason):
    with pytest.raises(MalformedRecord) as caught:
        load_mapping(data, WHERE)
    assert caught.value.reason == reason
    assert str(caught.value) == f"malformed record {WHERE}: {reason}"


def test_load_refuses_blobs_over_one_mebibyte_without_parsing():
    data = b"id: fact-ab12cd34\ncontent: " + b"x" * MAX_RECORD_BYTES + b"\n"
    with pytest.raises(MalformedRecord, match=f"larger than the {MAX_RECORD_BYTES} byte limit"):
        load(data, WHERE)


@pytest.mark.parametrize(
    "data",
    [b"id: \xff\xfe broken utf-8\n", b"id: [unclosed\n", b"a: b: c\n", b"\tid: tab-indented\n"],
)
def test_load_refuses_invalid_yaml_naming_where(data):
    with pytest.raises(MalformedRecord) as caught:
        load(data, WHERE)
    assert str(caught.value).startswith(f"malformed record {WHERE}: ")
    assert "\n" not in str(caught.value)


def test_load_refuses_deep_nesting():
    with pytest.raises(MalformedRecord, match="nest"):
        load_mapping(b"a: " + b"[" * 5000 + b"\n", WHERE)


@pytest.mark.parametrize(
    ("patch", "reason"),
    [
        (b"confidence: 1.5", "confidence: Input should be less than or equal to 1"),
        (b"confidence: yes", "confidence: Input should be a valid number, "
                             "unable to parse string as a number"),
        (
            b"type: wisdom",
            "type: Input should be 'axiom', 'core', 'fact', 'insight' or 'preference'",
        ),
    ],
)
def test_load_names_the_invalid_field(patch, reason):
    data = VALID.replace(b"confidence: 0.95", patch) if b"confidence" in patch else (
        VALID.replace(b"type: fact", patch)
    )
    with pytest.raises(MalformedRecord) as caught:
        load(data, WHERE)
    assert caught.value.reason.startswith(reason)
    assert caught.value.where == WHERE


def test_load_names_nested_fields_and_validator_messages():
    data = VALID.replace(f'git_sha: "{SHA}"'.encode(), b"git_sha: not-hex")
    with pytest.raises(MalformedRecord) as caught:
        load(data, WHERE)
    assert caught.value.reason == (
        "provenance.git_sha: git_sha must be a hex commit id, got 'not-hex'"
    )


def test_core_schema_resolution_of_unquoted_scalars():
    data = (
        b"a: [yes, no, on, off, y, ~, null, '', 0x1F, 0o17, 010, 1_000, 1e3, .inf, -.inf,\n"
        b"    2024-01-02, 12:30:00, true, FALSE, +7, -0.5, .5, 1., 0b11]\n"
    )
    inf = float("inf")
    assert load_mapping(data, WHERE)["a"] == [
        "yes", "no", "on", "off", "y", None, None, "", 31, 15, 10, "1_000", 1000.0, inf, -inf,
        "2024-01-02", "12:30:00", True, False, 7, -0.5, 0.5, 1.0, "0b11",
    ]


def test_load_mapping_reads_a_legacy_ep0131_record():
    legacy = b"""\
id: "concept-8f2a1b9c"
type: "fact"               # axiom | fact | insight | preference | core
scope: "incarnation"       # universal | incarnation
content: "SQLite signal queue uses WAL mode and busy_timeout=5000ms."
confidence: 0.95           # Float in [0.0, 1.0]
"""
    assert load_mapping(legacy, ".tur/memories/concept-8f2a1b9c.yaml") == {
        "id": "concept-8f2a1b9c",
        "type": "fact",
        "scope": "incarnation",
        "content": "SQLite signal queue uses WAL mode and busy_timeout=5000ms.",
        "confidence": 0.95,
    }


def test_load_does_not_import_ruamel():
    code = (
        "import sys\n"
        "from gitmem.codec import load\n"
        f"load({VALID!r}, 'x')\n"
        "assert 'ruamel' not in sys.modules and 'ruamel.yaml' not in sys.modules, "
        "sorted(m for m in sys.modules if 'ruamel' in m)\n"
    )
    root = Path(__file__).resolve().parent.parent
    result = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_pure_python_fallback_reader_is_just_as_strict():
    code = (
        "import yaml\n"
        "del yaml.CSafeLoader\n"
        "from gitmem import codec\n"
        "from gitmem.errors import MalformedRecord\n"
        "from gitmem.codec import read as yaml_reader\n"
        "assert yaml_reader._CoreLoader.__mro__[1] is yaml.SafeLoader\n"
        "assert codec.load_mapping(b'a: [yes, 010, 0x1F, 1e3, ~]\\n', 'x') == "
        "{'a': ['yes', 10, 31, 1000.0, None]}\n"
        "for bad in (b'a: &x 1\\nb: *x\\n', b'a: 1\\na: 2\\n', b'a: !!python/name:os.system\\n'):\n"
        "    try:\n"
        "        codec.load_mapping(bad, 'x')\n"
        "    except MalformedRecord:\n"
        "        pass\n"
        "    else:\n"
        "        raise AssertionError(bad)\n"
    )
    root = Path(__file__).resolve().parent.parent
    result = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_load_of_a_typical_record_is_fast():
    # Budget 0.15 ms a record on a quiet machine; the bound here is loose
    # because CI machines are shared. CPU time, best of several rounds.
    best = min(_cpu_per_call(lambda: load(VALID, WHERE)) for _ in range(5))
    assert best < 1e-3


def _cpu_per_call(call, rounds: int = 200) -> float:
    started = time.process_time()
    for _ in range(rounds):
        call()
    return (time.process_time() - started) / rounds


# --- properties -------------------------------------------------------------------

# Any text without surrogates, mixed with text built from YAML's syntax
# characters and from words YAML would retype, which random text rarely hits.
YAML_PIECES = [
    *" \n\t\r#-:'\"\\|>!&*%@`[]{},?\x1b\x00\x85\u2028\ufeff",
    "no", "on", "~", "null", "true", "---", "...", "<<", "=", "0x10", "1e3", ".inf",
    "2024-01-02", "12:30:00", "0192117",
]
TEXT = st.one_of(
    st.text(st.characters(exclude_categories=("Cs",)), max_size=80),
    st.lists(st.sampled_from(YAML_PIECES), max_size=12).map("".join),
)


@settings(
    derandomize=True,
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    content=TEXT.filter(lambda s: s.strip()),
    agent=TEXT,
    new_content=TEXT.filter(lambda s: s.strip()),
    new_agent=st.one_of(st.none(), TEXT),
    confidence=st.floats(0, 1),
)
def test_any_text_round_trips_through_dump_new_and_update(
    content, agent, new_content, new_agent, confidence
):
    memory = full_memory(
        content=content,
        provenance=Provenance(observed_at=T0, source_agent=agent, source_harness=agent),
    )
    data = dump_new(memory)
    assert load(data, WHERE) == memory
    assert update(data, memory) == data
    with pytest.MonkeyPatch.context() as patch:  # the ruamel merge, not the shortcut
        patch.setattr(yaml_writer, "_unchanged", lambda mapping, memory: False)
        assert update(data, memory) == data

    changed = full_memory(
        content=new_content,
        confidence=confidence,
        provenance=Provenance(observed_at=T1, source_agent=new_agent, git_sha="0192117"),
    )
    assert load(update(data, changed), WHERE) == changed


# --- new records written without ruamel -------------------------------------------------

def ruamel_dump(memory: Memory) -> bytes:
    """What the round-trip writer makes of a new record (the canonical bytes)."""
    plain = yaml_writer._plain(memory)
    return yaml_writer._dump(yaml_writer._to_node(plain), yaml_writer._DEFAULT_INDENT)


TRICKY = [
    *RETYPED, *AWKWARD_CONTENT,
    "a: b", "a:b", "a:", ":a", ": a", "? q", "?q", "- item", "-item", "-", "?", ":", "#", "# x",
    "x #y", "x#y", "it's", "it's: here", "'quoted'", '"dq"', "it's \"both\"", "@at", "`tick`",
    "%pct", "[x]", "{y}", "!tag", "&anchor", "*alias", "|pipe", ">gt", "a,b", ",lead",
    "--- x", "...x", "-- x", "ünï cödé", "日本語 #5", "😀 emoji", "nbsp\xa0here", "\xa0lead",
    " lead", "trail ", "two  spaces", "a\n\nb", "a\n", "a\n\n", "a \nb", "a\n b", "a\n\n  b\n",
    "Name <me@example.com>", "src/a.py#L1-L3",
    "sha256:" + "c" * 64, "back\\slash", "tab\there", "cr\rhere", "esc\x1bhere", "\u2028",
    "HEAD had no commit when learned", "The API moved: see `docs/api.md` # not a comment",
]


def tricky_memory(rnd, text, when) -> Memory:
    def pick(*options):
        return rnd.choice(options)

    content = text if text.strip() else f"x{text}"
    kind = pick("fact", "insight", "axiom", "core", "preference")
    memory = Memory(
        id=f"{kind}-{rnd.randrange(16**8):08x}",
        type=kind,
        scope=pick("universal", "incarnation"),
        content=content,
        confidence=pick(1.0, 0.0, 0.5, 1e-7, 1 / 3, 0.95),
        provenance=Provenance(
            observed_at=when, git_sha=pick(None, SHA, "0192117"),
            source_agent=pick(None, "claude", text), source_harness=pick(None, "claude-code", text),
            context_ref=pick(None, "src/a.py#L1-L2", text), fingerprint=pick(None, "sha256:00ff")),
        decay=Decay(half_life_days=pick(None, 14.0, 0.5, 90), last_verified_at=when,
                    staleness_status=pick("fresh", "unanchored", "stale"),
                    reason=pick(None, "HEAD had no commit when learned", text)),
        relations=pick([], [Relation(type="supersedes", target="fact-11223344")],
                       [Relation(type="supports", target="fact-1"),
                        Relation(type="refines", target=text or "x")]),
        author=pick(None, "Ada <ada@example.com>", text),
        legacy_id=pick(None, "old-1", ["old-1", "old 2"]),
    )
    return memory.stamp(None, pick("Ada <ada@example.com>", text or "x"), when)


def test_a_new_record_is_written_without_ruamel_exactly_as_ruamel_writes_it():
    import random

    rnd = random.Random(16)
    texts = [*TRICKY, "x" * 70_000, "word " * 20_000 + "end", "y" * 60_000 + " #"]  # long: once each
    texts += [rnd.choice(["", " ", "\n"]).join(rnd.choices(TRICKY, k=rnd.randint(2, 3))) for _ in range(900)]
    emitted, kinds = 0, set()
    for text in texts:
        when = datetime(2026, 1, 1, tzinfo=UTC) + (T1 - T0) * rnd.random()
        memory = tricky_memory(rnd, text, when)
        fast = yaml_writer._emit(yaml_writer._plain(memory))
        if fast is not None:
            assert fast.encode() == ruamel_dump(memory), text
            emitted += 1
            kinds.update(line[8:10] for line in fast.splitlines() if line.startswith("content:"))
    # Most records take the short path, in every style a string gets.
    assert emitted > 0.9 * len(texts)
    assert {" '", ' "', " |"} <= kinds and any(k[1] not in "'\"|" for k in kinds)


@settings(derandomize=True, max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(content=TEXT.filter(lambda s: s.strip()), agent=TEXT, reason=TEXT)
def test_any_new_record_without_ruamel_is_byte_for_byte_ruamels(content, agent, reason):
    memory = full_memory(
        content=content, author=agent,
        provenance=Provenance(observed_at=T0, source_agent=agent, context_ref=agent),
        decay=Decay(half_life_days=14.0, last_verified_at=T1, reason=reason or None),
    ).stamp(None, agent or "x", T1)
    assert dump_new(memory) == ruamel_dump(memory)


def test_writing_a_new_record_loads_no_yaml_library():
    code = (
        "import sys\n"
        "from gitmem.codec import dump_new\n"
        "from gitmem.record.models import Memory\n"
        "data = dump_new(Memory(id='fact-ab12cd34', type='fact', content=\"it's: multi\\nline\"))\n"
        "assert data.startswith(b'id: fact-ab12cd34'), data\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('yaml', 'ruamel', '_ruamel_yaml')))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.strip() == "[]"


#: Strings some YAML reader takes for something else when unquoted: YAML 1.1 booleans (PyYAML,
#: ruamel 1.1), nulls, 1.1 and 1.2 numbers (octal, binary, hex, sexagesimal, underscores,
#: exponents), timestamps, the merge key, value and yaml indicators.
NOT_STRINGS_UNQUOTED = (
    "yes", "No", "ON", "off", "y", "N", "~", "null", "NULL", "", "true", "False",
    "0x1F", "0o17", "010", "0b101", "1_000", "1e3", "1E+3", "+7", "-0.5", ".5", "1.", ".inf", "-.Inf",
    ".NaN", "12:30:00", "190:20:30", "1:20.5", "2024-01-02", "2024-1-2 3:04:05", "2024-01-02T03:04:05Z",
    "<<", "=", "!", "&", "*",
)


@pytest.mark.parametrize("text", NOT_STRINGS_UNQUOTED)
def test_a_string_any_reader_would_misread_is_written_so_every_reader_reads_it_back(text):
    """Behaviour, not the libraries' patterns: PyYAML (1.1), ruamel (1.1, 1.2, round-trip) and
    gitmem's reader all read each written string back as the same string."""
    memory = full_memory(content=f"note {text}", provenance=Provenance(observed_at=T0, source_agent=text),
                         extra_value=text)
    data = dump_new(memory)
    readers = {
        "pyyaml": lambda b: yaml.safe_load(b),
        "ruamel-1.2": lambda b: YAML(typ="safe", pure=True).load(b),
        "ruamel-1.1": lambda b: YAML(typ="safe", pure=True).load(b"%YAML 1.1\n---\n" + b),
        "ruamel-rt": lambda b: YAML(typ="rt").load(b),
        "gitmem": lambda b: load_mapping(b, WHERE),
    }
    for name, read in readers.items():
        mapping = read(data)
        assert mapping["extra_value"] == text, (name, data)
        assert mapping["provenance"]["source_agent"] == text, (name, data)
    assert load(data, WHERE) == memory




@pytest.mark.parametrize("pattern", sorted(FIRST_CHARACTERS))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_string_a_quoting_pattern_matches_begins_with_one_of_its_first_characters(pattern, data):
    text = data.draw(st.from_regex(pattern, fullmatch=True))
    assert re.match(pattern, text)
    if text:  # the empty string is quoted whatever its first character
        assert text[0] in FIRST_CHARACTERS[pattern]
        assert needs_quotes(text)


@settings(max_examples=500, deadline=None)
@given(text=st.text(max_size=12) | st.from_regex(r"[-+._0-9a-zA-Z~<=!&*: ]{1,10}", fullmatch=True))
def test_quoting_by_first_character_quotes_exactly_what_any_pattern_matches(text):
    assert needs_quotes(text) == (text == "" or any(re.match(p, text) for p in FIRST_CHARACTERS))
