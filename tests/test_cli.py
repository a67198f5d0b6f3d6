"""Every ``tur`` command, run in-process on real temporary repositories; bad input gives one stderr line."""

from __future__ import annotations

import io
import json

import pytest

from gitmem.cli import Env, main
from gitmem.store import Mutation, Store
from tests.conftest import Result, commit_file, git, memory_ref, tur


def assert_one_line_error(result: Result, *needles: str) -> None:
    assert result.code != 0
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert "Traceback" not in result.err
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_learn_prints_the_id_and_commits_one_record(repo):
    r = tur(repo, "learn", "SQLite queue uses WAL mode", "--type", "fact", "--agent", "claude")
    assert r.code == 0, r.err
    mid = r.out.strip()
    assert mid.startswith("fact-") and len(mid) == 13
    files = git(repo, "ls-tree", "-r", "--name-only", "refs/tur/memories").split()
    assert f"memories/{mid[5:7]}/{mid}.yaml" in files
    msg = git(repo, "log", "-1", "--format=%s", "refs/tur/memories").strip()
    assert msg == f"learn {mid}: SQLite queue uses WAL mode"
    # The ref is an orphan chain: no shared history with the code.
    assert git(repo, "merge-base", "HEAD", "refs/tur/memories", check=False).strip() == ""


def test_learning_the_same_content_twice_reverifies_instead_of_duplicating(repo):
    first = tur(repo, "learn", "SQLite queue uses WAL mode.").out.strip()
    again = tur(repo, "learn", "sqlite   queue uses WAL mode")
    assert again.out.strip() == first
    assert "re-verified" in again.err
    listed = json.loads(tur(repo, "list", "--format", "json").out)
    assert [m["id"] for m in listed] == [first]


def test_learning_a_stale_memory_again_without_an_anchor_keeps_it_stale(repo):
    mid = tur(repo, "learn", "lines five to seven", "--file", "src/app.py#L5-L7").out.strip()
    lines = (repo / "src" / "app.py").read_text().splitlines(keepends=True)
    lines[5] = "changed\n"
    commit_file(repo, "src/app.py", "".join(lines), "change line 6")
    tur(repo, "verify")
    before = git(repo, "rev-parse", "refs/tur/memories")
    again = tur(repo, "learn", "lines five to seven")
    assert again.code == 0 and "still stale: line 6 changed in" in again.err
    assert git(repo, "rev-parse", "refs/tur/memories") == before  # nothing to record
    shown = json.loads(tur(repo, "show", mid, "--format", "json").out)
    assert shown["decay"]["staleness_status"] == "stale"
    assert shown["provenance"]["context_ref"] == "src/app.py#L5-L7"
    # Anchoring it again (to the current lines) is what makes it fresh.
    tur(repo, "learn", "lines five to seven", "--file", "src/app.py#L5-L7")
    shown = json.loads(tur(repo, "show", mid, "--format", "json").out)
    assert shown["decay"]["staleness_status"] == "fresh"


def test_learn_anchored_to_a_line_range_records_head_and_range(repo):
    head = git(repo, "rev-parse", "HEAD").strip()
    mid = tur(repo, "learn", "lines five to seven", "--file", "src/app.py#L5-L7").out.strip()
    shown = json.loads(tur(repo, "show", mid, "--format", "json").out)
    assert shown["provenance"]["git_sha"] == head
    assert shown["provenance"]["context_ref"] == "src/app.py#L5-L7"
    assert shown["decay"]["staleness_status"] == "fresh"
    assert shown["commits"][0]["message"].startswith(f"learn {mid}")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--file", "../outside.py"], "outside"),
        (["--file", "src/missing.py"], "does not exist"),
        (["--file", "src/app.py#L15-L40"], "past the end"),
        (["--file", "src/app.py#L9-L3"], "L9-L3"),
        (["--confidence", "1.5"], "confidence"),
    ],
)
def test_bad_learn_input_is_one_line_and_stores_nothing(repo, args, needle):
    r = tur(repo, "learn", "something", *args)
    assert_one_line_error(r, needle)
    assert memory_ref(repo) == ""


def test_content_with_a_credential_is_refused_unless_allowed(repo):
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    r = tur(repo, "learn", f"deploy token is {token}")
    assert_one_line_error(r, "secret")
    assert memory_ref(repo) == ""
    ok = tur(repo, "learn", f"deploy token is {token}", "--allow-secret")
    assert ok.code == 0


def test_unknown_id_is_a_clear_error(repo):
    tur(repo, "learn", "a fact")
    before = memory_ref(repo)
    for cmd in (["show", "fact-deadbeef"], ["refute", "fact-deadbeef", "--reason", "x"],
                ["forget", "fact-deadbeef"]):
        assert_one_line_error(tur(repo, *cmd), "fact-deadbeef")
    assert memory_ref(repo) == before


def test_not_a_repository_is_one_line(tmp_path):
    r = tur(tmp_path, "list")
    assert_one_line_error(r, "not a git repository")


def test_subdirectory_and_linked_worktree_find_the_repository(repo, tmp_path):
    mid = tur(repo / "src", "learn", "from a subdirectory", "--file", "app.py#L1-L2").out.strip()
    shown = json.loads(tur(repo, "show", mid, "--format", "json").out)
    assert shown["provenance"]["context_ref"] == "src/app.py#L1-L2"
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", str(wt), "-b", "side")
    listed = json.loads(tur(wt, "list", "--format", "json").out)
    assert [m["id"] for m in listed] == [mid]


def test_empty_repository_learns_an_unanchored_memory(empty_repo):
    r = tur(empty_repo, "learn", "we use tabs")
    assert r.code == 0, r.err
    listed = json.loads(tur(empty_repo, "list", "--format", "json").out)
    assert listed[0]["status"] == "unanchored"
    assert listed[0]["reason"] == "HEAD had no commit when learned"
    assert_one_line_error(tur(empty_repo, "verify"), "the repository has no commits yet",
                          "commit something first")


def test_a_bare_repository_whose_head_names_a_missing_branch_says_which_branches_exist(repo, tmp_path):
    bare = tmp_path / "shared.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "master", str(bare))
    git(repo, "push", "-q", str(bare), "HEAD:refs/heads/main")
    r = tur(bare, "verify")
    assert r.code == 1
    assert_one_line_error(r, "HEAD names branch 'master', which has no commits (branches: main)",
                          "git symbolic-ref HEAD refs/heads/main")


def test_refute_and_forget_keep_history(repo):
    mid = tur(repo, "learn", "port is 8080").out.strip()
    assert tur(repo, "refute", mid, "--reason", "it moved to 9090").code == 0
    shown = json.loads(tur(repo, "show", mid, "--format", "json").out)
    assert shown["refutation"]["reason"] == "it moved to 9090"
    assert shown["decay"]["staleness_status"] == "refuted"
    assert tur(repo, "forget", mid).code == 0
    assert json.loads(tur(repo, "list", "--format", "json").out) == []
    log = git(repo, "log", "--format=%s", "refs/tur/memories").splitlines()
    assert log[0] == f"forget {mid}"
    assert any(line.startswith(f"refute {mid}") for line in log)


def test_markup_like_text_reaches_stdout_exactly(repo):
    text = "[bold]not bold[/bold] and list[int] and [/x]"
    mid = tur(repo, "learn", text).out.strip()
    out = tur(repo, "list", "--format", "table").out
    assert text in out
    wake = tur(repo, "wake", "--token-budget", "500").out
    assert text in wake
    assert mid in wake


def test_long_content_is_never_hard_wrapped_when_piped(repo):
    text = "word " * 80
    tur(repo, "learn", text.strip())
    out = tur(repo, "list").out
    assert text.strip() in out


def test_verify_reports_a_changed_range_as_stale_and_records_it(repo):
    mid = tur(repo, "learn", "line six says six", "--file", "src/app.py#L5-L7").out.strip()
    body = "".join(f"line {i}\n" if i != 6 else "line six changed\n" for i in range(1, 21))
    sha = commit_file(repo, "src/app.py", body, "change line 6")
    r = tur(repo, "verify")
    assert r.code == 0, r.err
    assert "1 stale" in r.out
    assert mid in r.out and sha[:7] in r.out
    shown = json.loads(tur(repo, "show", mid, "--format", "json").out)
    assert shown["decay"]["staleness_status"] == "stale"
    assert tur(repo, "verify").out.splitlines()[-1] == "nothing changed"


def test_status_does_not_write(repo):
    tur(repo, "learn", "line six says six", "--file", "src/app.py#L5-L7")
    commit_file(repo, "src/app.py", "changed\n" * 20, "rewrite")
    before = memory_ref(repo)
    r = tur(repo, "status")
    assert "1 stale" in r.out
    assert memory_ref(repo) == before


def test_wake_never_exceeds_the_budget_and_says_how_many_were_omitted(repo):
    for i in range(30):
        tur(repo, "learn", f"fact number {i} about module {i} and its quirks in detail")
    out = tur(repo, "wake", "--token-budget", "120", "--format", "json").out
    doc = json.loads(out)
    assert doc["tokens"] <= 120
    assert doc["omitted"] > 0
    assert f"{doc['omitted']} lower-salience memories omitted" in doc["text"]
    full = tur(repo, "wake", "--unbounded").out
    assert full.count("[fact-") == 30


def test_recall_finds_by_words_and_frames_hypotheses(repo):
    mid = tur(repo, "learn", "SQLite signal queue uses WAL mode", "--confidence", "0.95").out.strip()
    tur(repo, "learn", "The frontend is written in Svelte")
    r = tur(repo, "recall", "--query", "sqlite queue journal mode")
    assert r.code == 0, r.err
    assert f"[{mid}] SQLite signal queue uses WAL mode" in r.out
    assert "Conf: 0.95" in r.out
    assert "Svelte" not in r.out
    nothing = tur(repo, "recall", "--query", "kubernetes helm chart", "--format", "json")
    assert json.loads(nothing.out)["hits"] == []


def test_import_legacy_records_in_one_commit(repo, tmp_path):
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    (legacy / "a.yaml").write_text(
        '# legacy record\nid: "concept-8f2a1b9c"\ntype: fact\nscope: incarnation\n'
        'content: "Auth uses JWT"\nconfidence: 0.8\nowner: team-a\n'
    )
    (legacy / "b.yaml").write_text('id: "concept-00000001"\ntype: axiom\ncontent: Always type-hint\n')
    r = tur(repo, "import", str(legacy))
    assert r.code == 0, r.err
    assert "imported 2" in r.out
    assert git(repo, "rev-list", "--count", "refs/tur/memories").strip() == "1"
    listed = {m["content"]: m for m in json.loads(tur(repo, "list", "--format", "json").out)}
    assert listed["Always type-hint"]["status"] == "unanchored"
    assert listed["Always type-hint"]["confidence"] == 1.0
    shown = json.loads(tur(repo, "show", listed["Auth uses JWT"]["id"], "--format", "json").out)
    assert shown["legacy_id"] == "concept-8f2a1b9c"


def test_malformed_blob_on_the_ref_is_skipped_with_a_warning(repo):
    good = tur(repo, "learn", "a good memory about caching").out.strip()
    # A teammate's broken gitmem pushed an unparsable record: write one the same way.
    Store.discover(repo).transact(
        lambda tip: Mutation({"memories/ab/fact-ab000000.yaml": b"id: [unclosed\n"}, "bad push")
    )
    blob = git(repo, "rev-parse", "refs/tur/memories:memories/ab/fact-ab000000.yaml").strip()
    r = tur(repo, "list", "--format", "json")
    assert r.code == 0
    assert [m["id"] for m in json.loads(r.out)] == [good]
    assert "fact-ab000000" in r.err and blob[:12] in r.err
    w = tur(repo, "wake")
    assert w.code == 0 and "a good memory about caching" in w.out


def test_hook_pre_turn_prints_recall_and_never_fails(repo):
    tur(repo, "learn", "SQLite signal queue uses WAL mode")
    r = tur(repo, "hook", "pre-turn", stdin=json.dumps({"prompt": "refactor the sqlite queue"}))
    assert r.code == 0 and "WAL mode" in r.out
    garbage = tur(repo, "hook", "pre-turn", stdin="{not json")
    assert garbage.code == 0 and garbage.out == ""
    none = tur(repo, "hook", "pre-turn", stdin=json.dumps({"prompt": "zzz qqq"}))
    assert none.code == 0 and none.out == ""


def test_hook_pre_turn_outside_a_repository_reports_on_stderr_and_exits_0(tmp_path):
    r = tur(tmp_path, "hook", "pre-turn", stdin=json.dumps({"prompt": "anything"}))
    assert r.code == 0 and r.out == ""
    assert "not a git repository" in r.err


def test_version_and_help_work_outside_a_repository(tmp_path, capsys):
    assert tur(tmp_path, "--version").code == 0
    assert "tur (gitmem) " in capsys.readouterr().out
    assert tur(tmp_path, "--help").code == 0
    assert "usage: tur" in capsys.readouterr().out


def test_verify_id_restarts_time_decay_and_confirm_vouches_for_a_stale_memory(repo):
    mid = tur(repo, "learn", "line six says six", "--file", "src/app.py#L5-L7").out.strip()
    before = json.loads(tur(repo, "show", mid, "--format", "json").out)
    body = "".join(f"line {i}\n" if i != 6 else "line six changed\n" for i in range(1, 21))
    sha = commit_file(repo, "src/app.py", body, "change line 6")
    r = tur(repo, "verify", mid)
    assert "stale" in r.out
    assert json.loads(tur(repo, "show", mid, "--format", "json").out)["decay"]["staleness_status"] == "stale"
    c = tur(repo, "verify", "--confirm", mid)
    assert c.code == 0, c.err
    after = json.loads(tur(repo, "show", mid, "--format", "json").out)
    assert after["decay"]["staleness_status"] == "fresh"
    assert "reason" not in after["decay"]
    assert "confirmed" in c.out
    assert after["provenance"]["git_sha"] == sha
    assert after["provenance"]["context_ref"] == "src/app.py#L5-L7"
    assert after["provenance"]["observed_at"] == before["provenance"]["observed_at"]
    # The new fingerprint is of the new lines: a plain verify now finds it fresh and unchanged.
    assert tur(repo, "verify").out.splitlines()[-1] == "nothing changed"


def test_confirm_without_ids_is_refused(repo):
    assert_one_line_error(tur(repo, "verify", "--confirm"), "--confirm")


def test_content_that_is_not_utf8_is_refused_in_one_line(repo):
    # Undecodable command-line bytes reach Python as lone surrogates.
    r = tur(repo, "learn", "bad byte \udcff here")
    assert_one_line_error(r, "UTF-8")
    assert memory_ref(repo) == ""


def test_learning_an_anchor_on_uncommitted_lines_is_refused(repo):
    (repo / "src" / "app.py").write_text("".join(f"line {i}\n" if i != 6 else "edited\n"
                                                 for i in range(1, 21)))
    r = tur(repo, "learn", "line six", "--file", "src/app.py#L5-L7")
    assert_one_line_error(r, "src/app.py#L5-L7 has uncommitted changes")
    assert memory_ref(repo) == ""
    # Lines elsewhere in the file are fine to anchor.
    assert tur(repo, "learn", "line ten", "--file", "src/app.py#L10-L11").code == 0


def test_confirm_keeps_a_memory_whose_anchored_file_is_gone(repo):
    mid = tur(repo, "learn", "app lines", "--file", "src/app.py#L5-L7").out.strip()
    git(repo, "rm", "-q", "src/app.py")
    git(repo, "commit", "-q", "-m", "drop app")
    tur(repo, "verify")
    r = tur(repo, "verify", "--confirm", mid)
    assert_one_line_error(r, "cannot be mapped to HEAD")
    shown = json.loads(tur(repo, "show", mid, "--format", "json").out)
    assert shown["decay"]["staleness_status"] == "stale"
    assert shown["provenance"]["context_ref"] == "src/app.py#L5-L7"


def test_import_applies_the_credential_and_anchor_gates_of_learn(repo, tmp_path):
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    (legacy / "secret.yaml").write_text(f'id: concept-1\ntype: fact\ncontent: "token {token}"\n')
    (legacy / "escape.yaml").write_text(
        'id: concept-2\ntype: fact\ncontent: reads passwd\nprovenance:\n'
        '  observed_at: "2026-01-01T00:00:00Z"\n  context_ref: ../../etc/passwd#L1-L2\n'
    )
    (legacy / "fine.yaml").write_text("id: concept-3\ntype: fact\ncontent: an ordinary memory\n")
    r = tur(repo, "import", str(legacy))
    assert r.code == 0 and "imported 1, unchanged 0, failed 2" in r.out
    assert "secret" in r.err and "escape.yaml" in r.err
    assert [m["content"] for m in json.loads(tur(repo, "list", "--format", "json").out)] == [
        "an ordinary memory"
    ]
    assert tur(repo, "import", str(legacy / "secret.yaml"), "--allow-secret").code == 0


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_control_characters_are_escaped_on_a_terminal_and_when_piped_to_an_agent(repo):
    text = "red \x1b[31malert\x1b[0m and \u202eevil"
    tur(repo, "learn", text)
    piped = tur(repo, "wake").out  # what an agent reads: the same escapes as on a screen
    assert "\x1b" not in piped and "\u202e" not in piped
    assert "red \\x1b[31malert\\x1b[0m and \\u202eevil" in piped
    out = _Terminal()
    assert main(["-C", str(repo), "wake"], Env(out=out, err=io.StringIO())) == 0
    shown = out.getvalue()
    assert "\x1b" not in shown and "\u202e" not in shown
    assert "red \\x1b[31malert\\x1b[0m and \\u202eevil" in shown


def test_a_type_name_as_an_id_names_no_memory_even_when_one_has_that_type(repo):
    tur(repo, "learn", "--type", "axiom", "the only axiom about parsing")
    assert_one_line_error(tur(repo, "forget", "axiom"), "'axiom' is a memory type, not an id")
    assert len(tur(repo, "list").out.splitlines()) == 2  # the header and the axiom


def test_a_missing_directory_and_a_too_short_prefix_say_what_is_wrong(repo, tmp_path):
    missing = tur(repo, "-C", str(tmp_path / "nowhere"), "list")
    assert_one_line_error(missing, "no such directory")
    tur(repo, "learn", "a memory to look for")
    short = tur(repo, "show", "fa")
    assert_one_line_error(short, "at least 4 characters")


def test_a_typed_prefix_of_under_four_hex_digits_names_no_memory_and_forgets_nothing(repo):
    learned = tur(repo, "learn", "the deploy script needs the staging token").out.strip()
    kind, digits = learned.rsplit("-", 1)
    for short in (f"{kind}-{digits[:1]}", f"{kind}-{digits[:3]}", f"{kind}-"):
        assert_one_line_error(tur(repo, "forget", short), "4 hex digits after the type")
    assert tur(repo, "show", learned).out.startswith(f"id: {learned}")
    assert tur(repo, "show", f"{kind}-{digits[:4]}").out.startswith(f"id: {learned}")
    assert tur(repo, "show", digits[:4]).out.startswith(f"id: {learned}")


def test_an_id_in_upper_case_names_the_memory_and_a_trailing_dash_names_none(repo):
    learned = tur(repo, "learn", "the deploy script needs the staging token").out.strip()
    for typed in (learned.upper(), learned[:9].upper(), learned.rsplit("-", 1)[1][:4].upper()):
        assert tur(repo, "show", typed).out.startswith(f"id: {learned}"), typed
    # A whole id with a stray dash is no prefix of it, and not a too-short one either.
    assert_one_line_error(tur(repo, "forget", f"{learned}-"), f"no memory with id '{learned}-'")
    assert tur(repo, "show", learned).code == 0


def test_a_supersedes_cycle_is_refused_and_nothing_changes(repo):
    a = tur(repo, "learn", "the port is 8080").out.strip()
    b = tur(repo, "learn", "the port is 9090").out.strip()
    c = tur(repo, "learn", "the port is 7070").out.strip()
    assert tur(repo, "link", b, a, "--type", "supersedes").code == 0
    assert tur(repo, "link", c, b, "--type", "supersedes").code == 0
    before = git(repo, "rev-parse", "refs/tur/memories")
    for source, target in ((a, b), (a, c), (b, c)):
        refused = tur(repo, "link", source, target, "--type", "supersedes")
        assert_one_line_error(refused, f"already supersedes {source}")
    assert git(repo, "rev-parse", "refs/tur/memories") == before
    assert tur(repo, "link", a, b, "--type", "supports").code == 0  # other kinds may loop
    assert c in tur(repo, "wake").out


def test_learning_a_refuted_memory_again_says_it_stays_refuted(repo):
    mid = tur(repo, "learn", "the cache is never cleared").out.strip()
    tur(repo, "refute", mid, "--reason", "it is cleared on deploy")
    again = tur(repo, "learn", "the cache is never cleared")
    assert again.code == 0 and "is refuted (it is cleared on deploy); it stays refuted" in again.err
    assert "re-verified" not in again.err


def test_learning_known_text_with_another_type_says_the_type_is_kept(repo):
    mid = tur(repo, "learn", "the build uses make").out.strip()
    again = tur(repo, "learn", "the build uses make", "--type", "insight")
    assert again.out.strip() == mid and mid.startswith("fact-")
    assert f"{mid} was already known as a fact; type insight is ignored" in again.err
    assert "--type" not in tur(repo, "learn", "the build uses make").err


def test_weight_decays_with_days_and_commits_until_wake_leaves_the_memory_out(repo):
    import math
    from datetime import UTC, datetime, timedelta

    from gitmem.api import Gitmem

    learned_at = datetime(2026, 11, 1, tzinfo=UTC)
    gm = Gitmem.open(repo)
    mid = gm.learn("the parser keeps a line cache", file="src/app.py#L1-L2",
                   confidence=0.9, now=learned_at).memory.id
    for i in range(15):  # commits elsewhere: the anchor stays fresh, the distance grows
        commit_file(repo, f"docs/note{i}.md", f"note {i}\n", f"note {i}")
    later = learned_at + timedelta(days=30)
    gm = Gitmem.open(repo)
    (row,) = [r for r in gm.status_view(now=later).rows if r.memory_id == mid]
    assert row.commit_distance == 15
    assert row.weight == pytest.approx(0.9 * 2 ** (-30 / 14) * math.exp(-0.05 * 15))
    reasons = {e.memory_id: e.reason for e in gm.wake(now=later)[0].assembly}
    assert reasons[mid] == "low_weight"
    # On the day it was learned, 15 commits alone leave it in wake (0.9 × e^-0.75 ≈ 0.43).
    reasons = {e.memory_id: e.reason for e in gm.wake(now=learned_at)[0].assembly}
    assert reasons[mid] is None


def test_confidence_command_stores_a_value_and_refuses_one_out_of_range(repo):
    mid = tur(repo, "learn", "the queue retries five times").out.strip()
    assert tur(repo, "confidence", mid, "0.4").code == 0
    assert json.loads(tur(repo, "show", mid, "--format", "json").out)["confidence"] == 0.4
    before = git(repo, "rev-parse", "refs/tur/memories")
    assert_one_line_error(tur(repo, "confidence", mid, "1.5"), "between 0 and 1")
    assert git(repo, "rev-parse", "refs/tur/memories") == before


def test_list_filters_by_type_and_status(repo):
    fact = tur(repo, "learn", "the queue retries five times").out.strip()
    axiom = tur(repo, "learn", "never push to main", "--type", "axiom").out.strip()
    wrong = tur(repo, "learn", "the queue never retries").out.strip()
    tur(repo, "refute", wrong, "--reason", "it retries five times")

    def listed(*args: str) -> set[str]:
        return {row["id"] for row in json.loads(tur(repo, "list", "--format", "json", *args).out)}

    assert listed() == {fact, axiom, wrong}
    assert listed("--type", "axiom") == {axiom}
    assert listed("--status", "refuted") == {wrong}
    assert listed("--type", "fact", "--status", "fresh") == {fact}


def test_a_malformed_record_can_be_forgotten(repo):
    tur(repo, "learn", "a good memory")
    Store.discover(repo).transact(lambda tip: Mutation(
        {"memories/0b/fact-0badbad0.yaml": b"id: fact-0badbad0\ntype: fact\n"}, "hand-written"))
    listed = tur(repo, "list")
    assert "fact-0badbad0" in listed.err  # warned about, not listed
    gone = tur(repo, "forget", "fact-0bad")
    assert gone.code == 0 and "forgot fact-0badbad0" in gone.out
    assert "fact-0badbad0" not in tur(repo, "list").err


def test_warnings_quoting_stored_text_are_escaped_on_a_terminal(repo):
    mid = tur(repo, "learn", "the cache is never cleared").out.strip()
    tur(repo, "refute", mid, "--reason", "wrong \x1b[2J\x9b2J cleared")
    err = _Terminal()
    main(["-C", str(repo), "learn", "the cache is never cleared"], Env(out=io.StringIO(), err=err))
    shown = err.getvalue()
    assert "\x1b" not in shown and "\x9b" not in shown
    assert "wrong \\x1b[2J\\x9b2J cleared" in shown
    assert "\x1b[2J" in tur(repo, "learn", "the cache is never cleared").err  # piped: exact
