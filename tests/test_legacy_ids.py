"""Imported ids keep working: every command resolves a ``legacy_id``, relations follow the new ids,
and an imported file keeps its comments and key order."""

from __future__ import annotations

import pytest
import yaml

from gitmem.api import Gitmem
from gitmem.cache import records as cache_records
from gitmem.errors import AmbiguousId, UnknownMemory
from gitmem.record.ids import memory_id
from tests.test_cli import assert_one_line_error, memory_ref, tur

TEAM_FILE = """\
# team note: reviewed by the auth group, keep in sync with the wiki
id: "fact-0badc0de"
content: Auth uses JWT
type: fact   # was a concept before
scope: incarnation
"""


@pytest.fixture
def imported(repo, tmp_path):
    """``fact-0badc0de`` (with a comment) and a record that supersedes it by that old id."""
    folder = tmp_path / "legacy"
    folder.mkdir()
    (folder / "a.yaml").write_text(TEAM_FILE)
    (folder / "b.yaml").write_text(
        'id: "fact-00000b0b"\ntype: fact\ncontent: Auth uses JWT with RS256\n'
        "relations:\n  - type: supersedes\n    target: fact-0badc0de\n"
        "  - type: supports\n    target: fact-deadbeef\n"
    )
    r = tur(repo, "import", str(folder))
    assert r.code == 0, r.err
    return repo, r


def test_a_legacy_id_names_the_memory_in_every_command(imported):
    repo, _ = imported
    new_id = memory_id("fact", "Auth uses JWT")
    assert tur(repo, "show", "fact-0badc0de").out.startswith("# team note")
    assert tur(repo, "show", "0badc0de", "--format", "json").code == 0
    assert tur(repo, "confidence", "fact-0badc0de", "0.8").out.startswith(new_id)
    assert tur(repo, "verify", "0badc0").code == 0
    r = tur(repo, "refute", "fact-0badc0de", "--reason", "we moved to sessions")
    assert r.code == 0 and r.out.strip() == f"refuted {new_id}"
    assert tur(repo, "link", "fact-00000b0b", "0badc0de", "--type", "contradicts").code == 0
    r = tur(repo, "forget", "fact-0badc0de")
    assert r.code == 0 and new_id in r.out
    assert_one_line_error(tur(repo, "show", "fact-0badc0de"), "no memory with id 'fact-0badc0de'")


def test_the_api_resolves_legacy_ids_and_prefixes(imported):
    repo, _ = imported
    gm = Gitmem.open(repo)
    new_id = memory_id("fact", "Auth uses JWT")
    assert gm.resolve("fact-0badc0de") == new_id
    assert gm.resolve("fact-0bad") == new_id
    assert gm.get("0badc0").id == new_id
    assert gm.resolve("FACT-0BADC0DE") == gm.resolve("0BADC0") == new_id  # hashes, in either case
    assert gm.legacy_ids()[new_id] == ("fact-0badc0de",)
    with pytest.raises(UnknownMemory):
        gm.resolve("fact-0bad0000")


def test_comments_and_key_order_of_an_imported_file_survive(imported):
    repo, _ = imported
    text = Gitmem.open(repo).record_text("fact-0badc0de")
    assert text.startswith("# team note: reviewed by the auth group")
    assert "type: fact   # was a concept before\n" in text
    keys = [line.split(":")[0] for line in text.splitlines() if line and line[0].isalpha()]
    assert keys == ["id", "content", "type", "scope", "legacy_id"]
    assert yaml.safe_load(text)["id"] == memory_id("fact", "Auth uses JWT")


def test_relations_to_legacy_ids_follow_the_new_ids_and_others_are_kept_and_reported(imported):
    repo, r = imported
    gm = Gitmem.open(repo)
    b = gm.get("fact-00000b0b")
    assert [(x.type.value, x.target) for x in b.relations] == [
        ("supersedes", memory_id("fact", "Auth uses JWT")), ("supports", "fact-deadbeef")]
    assert "fact-deadbeef" in r.err and "no such memory in the store; kept" in r.err
    # The superseded memory leaves wake, as a relation to its new id makes it.
    assert "Auth uses JWT\n" not in tur(repo, "wake", "--token-budget", "0").out


def test_a_relation_to_a_legacy_id_already_stored_follows_it_in_a_later_import(imported, tmp_path):
    repo, _ = imported
    later = tmp_path / "later.yaml"
    later.write_text("id: concept-9\ntype: insight\ncontent: JWT needs clock sync\n"
                     "relations:\n  - {type: refines, target: fact-0badc0de}\n")
    r = tur(repo, "import", str(later))
    assert r.code == 0 and r.err == ""
    relation = Gitmem.open(repo).get("concept-9").relations[0]
    assert relation.target == memory_id("fact", "Auth uses JWT")


def test_an_old_id_prefix_of_under_four_characters_after_its_type_names_nothing(imported):
    repo, _ = imported
    before = tur(repo, "list").out
    for short in ("fact-", "fact-0", "fact-0ba", "fact"):
        assert_one_line_error(tur(repo, "forget", short), "no memory with id")
    assert tur(repo, "list").out == before
    assert Gitmem.open(repo).resolve("fact-0bad") == memory_id("fact", "Auth uses JWT")


def test_ids_win_over_legacy_ids_and_a_prefix_of_two_legacy_ids_is_ambiguous(repo, tmp_path):
    learned = tur(repo, "learn", "Queue uses WAL").out.strip()
    folder = tmp_path / "legacy"
    folder.mkdir()
    hex_part = learned.split("-")[1]
    (folder / "a.yaml").write_text(f"id: concept-{hex_part}\ntype: insight\ncontent: One\n")
    (folder / "b.yaml").write_text("id: concept-1234aaaa\ntype: insight\ncontent: Two\n")
    (folder / "c.yaml").write_text("id: concept-1234bbbb\ntype: insight\ncontent: Three\n")
    assert tur(repo, "import", str(folder)).code == 0
    gm = Gitmem.open(repo)
    assert gm.resolve(hex_part) == learned
    assert gm.resolve(f"concept-{hex_part}") == memory_id("insight", "One")
    with pytest.raises(AmbiguousId):
        gm.resolve("concept-1234")
    assert_one_line_error(tur(repo, "show", "concept-1234"), "matches 2 memories")


def test_resolving_a_legacy_id_parses_no_record_when_the_cache_is_warm(imported, monkeypatch):
    repo, _ = imported
    assert tur(repo, "list").code == 0  # builds the read cache
    parsed = []
    real = cache_records.parse_record
    monkeypatch.setattr(cache_records, "parse_record", lambda *a: parsed.append(a) or real(*a))
    gm = Gitmem.open(repo)
    assert gm.resolve("fact-0badc0de") == memory_id("fact", "Auth uses JWT")
    assert parsed == []


def test_dry_run_of_a_file_import_writes_nothing(repo, tmp_path):
    (tmp_path / "a.yaml").write_text(TEAM_FILE)
    r = tur(repo, "import", str(tmp_path / "a.yaml"), "--dry-run")
    assert r.code == 0 and r.out.strip() == "would import 1, unchanged 0, failed 0"
    assert memory_ref(repo) == ""


def test_importing_the_same_file_twice_changes_nothing(imported, tmp_path):
    repo, _ = imported
    before = memory_ref(repo)
    r = tur(repo, "import", str(tmp_path / "legacy"))
    assert r.code == 0 and "imported 0, unchanged 2" in r.out
    assert memory_ref(repo) == before


def test_an_abbreviated_observed_commit_is_stored_in_full_when_it_resolves(repo, tmp_path):
    head = Gitmem.open(repo).head()
    assert head is not None
    folder = tmp_path / "short"
    folder.mkdir()
    (folder / "a.yaml").write_text(
        f"id: fact-0000aaaa\ntype: fact\ncontent: seen at a short sha\n"
        f"provenance:\n  git_sha: {head[:7]}   # abbreviated by hand\n")
    (folder / "b.yaml").write_text(
        "id: fact-0000bbbb\ntype: fact\ncontent: seen at a commit of another repository\n"
        "provenance:\n  git_sha: abc1234\n")
    assert tur(repo, "import", str(folder)).code == 0
    gm = Gitmem.open(repo)
    short = gm.get(memory_id("fact", "seen at a short sha"))
    foreign = gm.get(memory_id("fact", "seen at a commit of another repository"))
    assert short.provenance is not None and short.provenance.git_sha == head
    assert "# abbreviated by hand" in tur(repo, "show", str(short.id)).out
    assert foreign.provenance is not None and foreign.provenance.git_sha == "abc1234"


def test_an_old_id_completes_to_the_memory_it_names_now(imported):
    from tests.test_cli_daily_use import _complete

    repo, _ = imported
    new_id = memory_id("fact", "Auth uses JWT")
    assert [c.strip() for c in _complete("tur show 0badc0", "bash", repo)] == [new_id]
    assert Gitmem.open(repo).id_choices("fact-0bad") == {new_id: "Auth uses JWT"}
