"""Integrity under faults and hostile records (issue 12): nothing acknowledged is lost, hidden or shadowed.

One section per kind of fault, each on real repositories (and real bare remotes for
sync): id collisions, records not where their id says, writes a reader would refuse,
credentials outside ``content``, a writer killed at the ref update, oversized notes, a
teammate's broken overwrite, cache files copied between trees, and skips nobody names.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gitmem.api import Gitmem
from gitmem.cache.reader import record_path
from gitmem.errors import InvalidInput, TooLarge
from gitmem.record.ids import content_key, memory_id, pick_id
from gitmem.record.limits import MAX_NOTE_BYTES, MAX_PERSONA_BYTES, MAX_RECORD_BYTES
from gitmem.store import MEMORY_REF, Mutation
from gitmem.vocabulary import ID_PATTERN
from tests.conftest import Result, cache_glob, clone, git, memory_ref, remote_tip, tur

# Two different statements whose 8 hex digits are the same: found once, offline, by
# fixtures/find_collision.py (a birthday search); never searched for here.
POOL_A = "The retry budget for worker pool 8381 is three attempts"
POOL_B = "The retry budget for worker pool 13291 is three attempts"
DEPLOY_A = "Deploys of service 77808 need two approvals"
DEPLOY_B = "Deploys of service 91084 need two approvals"
AWS_KEY = "AKIA" + "Z3MPLE7QW4RT2XYB"
T1 = datetime(2026, 2, 1, 9, 0, tzinfo=UTC)
T2 = datetime(2026, 2, 2, 9, 0, tzinfo=UTC)


def one_line_error(result: Result, *needles: str) -> str:
    assert result.code != 0
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert "Traceback" not in result.err and "internal error" not in result.err
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def plant(repo: Path, *entries: tuple[str, str, bytes | str | None], message: str = "plant") -> str:
    """Commit raw tree entries on the memory ref with git's own plumbing, as a hostile or broken
    writer would: ``(mode, path, data)`` where data is a blob's bytes, a commit id for a
    submodule (mode 160000), or ``None`` to remove the path. Returns the new tip."""
    index = repo / ".git" / "plant-index"
    env = dict(os.environ, GIT_INDEX_FILE=str(index))

    def run(*args: str, data: bytes | None = None) -> str:
        proc = subprocess.run(["git", *args], cwd=repo, env=env, input=data, capture_output=True,
                              check=True)
        return proc.stdout.decode().strip()

    tip = memory_ref(repo)
    run("read-tree", tip) if tip else run("read-tree", "--empty")
    for mode, path, data in entries:
        if data is None:
            run("update-index", "--force-remove", path)
            continue
        if mode == "160000":
            oid = str(data)
        else:
            oid = run("hash-object", "-w", "--stdin", data=data if isinstance(data, bytes) else data.encode())
        run("update-index", "--add", "--cacheinfo", f"{mode},{oid},{path}")
    tree = run("write-tree")
    commit = run("commit-tree", tree, *(["-p", tip] if tip else []), "-m", message)
    run("update-ref", MEMORY_REF, commit, *([tip] if tip else []))
    index.unlink()
    return commit


def blob(repo: Path, path: str) -> bytes:
    return subprocess.run(["git", "cat-file", "blob", f"{MEMORY_REF}:{path}"], cwd=repo,
                          capture_output=True, check=True).stdout


def tree_paths(repo: Path) -> set[str]:
    return set(git(repo, "ls-tree", "-r", "--name-only", MEMORY_REF).split())


def write_raw(gm: Gitmem, path: str, data: bytes | None) -> None:
    gm.store.transact(lambda tip: Mutation({path: data}, "raw edit"))


# -- 1. different statements, one id --------------------------------------------------------------


def test_the_constructed_pair_collides_in_8_hex_digits_and_not_in_16():
    assert content_key(POOL_A) == content_key(POOL_B) == "c8c2468e"
    assert content_key(DEPLOY_A) == content_key(DEPLOY_B)
    assert memory_id("fact", POOL_A, 16) != memory_id("fact", POOL_B, 16)


def test_pick_id_gives_a_longer_id_only_to_a_different_statement():
    short = memory_id("fact", POOL_A)
    assert pick_id("fact", POOL_A, {}) == (short, False)
    assert pick_id("fact", "the retry budget for worker pool 8381 is three attempts.",
                   {short: POOL_A.lower()}) == (short, True)
    longer = memory_id("fact", POOL_B, 16)
    assert pick_id("fact", POOL_B, {short: POOL_A.lower()}) == (longer, False)
    # An unreadable record is never written over either.
    assert pick_id("fact", POOL_B, {short: None}) == (longer, False)
    assert pick_id("fact", POOL_B, {short: POOL_A.lower(), longer: POOL_B.lower()}) == (longer, True)
    assert all(ID_PATTERN.match(i) for i in (short, longer, memory_id("fact", POOL_B, 64)))


def test_learning_a_colliding_statement_stores_it_under_a_longer_id(repo):
    first = tur(repo, "learn", POOL_A)
    second = tur(repo, "learn", POOL_B)
    assert (first.code, second.code) == (0, 0)
    a, b = first.out.strip(), second.out.strip()
    assert a == "fact-c8c2468e" and b == memory_id("fact", POOL_B, 16)
    assert "already known" not in second.err
    assert second.err.strip() == (f"{a} is a different statement with the same 8 hex digits; "
                                  f"this one is stored as {b}")
    listed = {m["id"]: m["content"] for m in json.loads(tur(repo, "list", "--format", "json").out)}
    assert listed == {a: POOL_A, b: POOL_B}
    # Both are known from now on: each re-verifies its own record.
    again_b, again_a = tur(repo, "learn", POOL_B.lower()), tur(repo, "learn", POOL_A + ".")
    assert (again_b.out.strip(), again_a.out.strip()) == (b, a)
    assert "re-verified" in again_b.err and "re-verified" in again_a.err
    # Every reader takes the longer id: show, wake, recall, refute, forget, the cache.
    assert POOL_B in tur(repo, "show", b).out and POOL_A in tur(repo, "show", a).out
    assert POOL_A in tur(repo, "show", "c8c2468e").out  # the whole short hex names one memory
    one_line_error(tur(repo, "show", "c8c2"), "matches 2 memories")
    woke = tur(repo, "wake")
    assert POOL_A in woke.out and POOL_B in woke.out and woke.err == ""
    assert tur(repo, "refute", b, "--reason", "pool 13291 was removed").code == 0
    assert tur(repo, "recall", "retry budget worker pool").out.count("worker pool") == 1
    assert tur(repo, "forget", b).code == 0
    assert [m["id"] for m in json.loads(tur(repo, "list", "--format", "json").out)] == [a]


def test_importing_two_colliding_files_stores_both(repo, tmp_path):
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    (legacy / "a.yaml").write_text(f"id: old-a\ntype: fact\ncontent: {POOL_A}\n")
    (legacy / "b.yaml").write_text(f"id: old-b\ntype: fact\ncontent: {POOL_B}\n")
    r = tur(repo, "import", str(legacy))
    assert r.code == 0 and r.out.strip() == "imported 2, unchanged 0, failed 0"
    longer = memory_id("fact", POOL_B, 16)
    assert f"fact-c8c2468e names a different memory; imported as {longer}" in r.err
    listed = {m["id"]: m["content"] for m in json.loads(tur(repo, "list", "--format", "json").out)}
    assert listed == {"fact-c8c2468e": POOL_A, longer: POOL_B}
    # Importing again changes nothing; a statement already learned is not overwritten.
    again = tur(repo, "import", str(legacy))
    assert again.out.strip() == "imported 0, unchanged 2, failed 0"
    other = tmp_path / "other"
    other.mkdir()
    (other / "d.yaml").write_text(f"type: fact\ncontent: {DEPLOY_B}\n")
    assert tur(repo, "learn", DEPLOY_A).out.strip() == memory_id("fact", DEPLOY_A)
    assert tur(repo, "import", str(other)).code == 0
    contents = {m["content"] for m in json.loads(tur(repo, "list", "--format", "json").out)}
    assert {DEPLOY_A, DEPLOY_B} <= contents


def test_sync_never_merges_two_statements_that_share_an_id(origin):
    a, b = Gitmem.open(clone(origin, "a")), Gitmem.open(clone(origin, "b"))
    a.learn("a shared base", now=T1)
    a.sync()
    b.sync()
    a_id = a.learn(POOL_A, now=T1).memory.id
    b_id = b.learn(POOL_B, now=T2).memory.id
    assert a_id == b_id == "fact-c8c2468e"  # each clone alone sees no collision
    a.sync()
    merged = b.sync()
    rows = {r.memory_id: r for r in merged.merged}
    longer = memory_id("fact", POOL_B, 16)
    assert rows["fact-c8c2468e"].status == "renamed" and longer in rows["fact-c8c2468e"].reason
    a.sync()
    for gm in (a, b):
        contents = {m.id: m.content for m in gm.memories()[0]}
        assert contents["fact-c8c2468e"] == POOL_A  # observed first: keeps the short id
        assert contents[longer] == POOL_B
    assert a.store.tip() == b.store.tip() == remote_tip(origin)


# -- 2. a record that is not where its id says -------------------------------------------------------


def test_a_blob_planted_in_another_shard_neither_shadows_nor_outlives_the_real_record(repo):
    mid = tur(repo, "learn", "Workers ack a job only after its commit").out.strip()
    real = blob(repo, record_path(mid))
    hostile = real.replace(b"Workers ack a job only after its commit", b"Workers ack a job before it runs")
    planted = f"memories/zz/{mid}.yaml"
    plant(repo, ("100644", planted, hostile))
    woke = tur(repo, "wake")
    assert "only after its commit" in woke.out and "before it runs" not in woke.out
    warning = f"skipped {planted}"
    assert woke.err.count(warning) == 1 and f"is a second record for {mid}" in woke.err
    assert "tur doctor --fix" in woke.err
    assert "only after its commit" in tur(repo, "show", mid).out
    # Forgetting the memory forgets it everywhere: the planted copy is never served.
    assert tur(repo, "forget", mid).code == 0
    after = tur(repo, "wake")
    assert "before it runs" not in after.out and f"is not where its id says: {mid}" in after.err
    assert json.loads(tur(repo, "list", "--format", "json").out) == []
    # And the curation commands can remove it.
    r = tur(repo, "forget", "--path", planted)
    assert r.code == 0 and planted not in tree_paths(repo)
    assert tur(repo, "wake").err == ""


def test_a_record_in_the_wrong_shard_is_named_and_doctor_fix_moves_it(repo):
    mid = tur(repo, "learn", "The scheduler runs every minute").out.strip()
    data = blob(repo, record_path(mid))
    wrong = f"memories/00/{mid}.yaml"
    plant(repo, ("100644", record_path(mid), None), ("100644", wrong, data))
    listed = tur(repo, "list", "--format", "json")
    assert json.loads(listed.out) == [] and listed.err.count(f"skipped {wrong}") == 1
    one_line_error(tur(repo, "refute", mid, "--reason", "x"), mid)
    doctor = tur(repo, "doctor")
    assert doctor.code == 1 and f"{wrong}: is not where its id says" in doctor.out
    assert f"move {wrong} to {record_path(mid)}" in doctor.err
    before = memory_ref(repo)
    assert memory_ref(repo) == before  # listing changes nothing
    fixed = tur(repo, "doctor", "--fix")
    assert fixed.code == 0 and f"fixed: move {wrong} to {record_path(mid)}" in fixed.out
    assert record_path(mid) in tree_paths(repo) and wrong not in tree_paths(repo)
    assert tur(repo, "refute", mid, "--reason", "it runs hourly now").code == 0
    clean = tur(repo, "doctor")
    assert clean.code == 0 and clean.out.startswith("no problems")


def test_entries_that_are_not_regular_record_files_are_named_and_removed(repo):
    mid = tur(repo, "learn", "A real memory").out.strip()
    head = git(repo, "rev-parse", "HEAD").strip()
    link = "memories/ab/fact-ab12cd34.yaml"
    sub = "memories/cd/fact-cd12ab34.yaml"
    folder = "memories/ef/fact-ef12ab34.yaml/inner.yaml"
    odd = "memories/12/notes.txt"
    plant(repo, ("120000", link, record_path(mid)), ("160000", sub, head), ("100644", folder, b"x: 1\n"),
          ("100644", odd, b"hello\n"), ("100644", "memories/README", b"not a shard\n"))
    r = tur(repo, "list", "--format", "json")
    assert [m["id"] for m in json.loads(r.out)] == [mid]
    for path, reason in ((link, "is a symbolic link, not a record file"),
                         (sub, "is a submodule, not a record file"),
                         ("memories/ef/fact-ef12ab34.yaml", "is a directory, not a record file"),
                         (odd, "is not named <type>-<hex>.yaml"),
                         ("memories/README", "is not a shard directory")):
        assert r.err.count(f"skipped {path} ") == 1 and reason in r.err
    assert tur(repo, "doctor", "--fix").code == 0
    assert tree_paths(repo) == {".gitmem", record_path(mid)}
    assert tur(repo, "wake").err == ""


# -- 3. acknowledged but unreadable -------------------------------------------------------------------


def test_a_learn_a_reader_would_refuse_is_refused_first(repo):
    gm = Gitmem.open(repo)
    before = memory_ref(repo)
    with pytest.raises(TooLarge, match="larger than the 1048576 byte limit"):
        gm.learn("x" * MAX_RECORD_BYTES)
    # 300,000 characters that the record escapes to 4 bytes each: refused on the bytes written.
    with pytest.raises(TooLarge, match=r"record fact-[0-9a-f]{8} would be \d+ bytes"):
        gm.learn("\x01" * 300_000)
    assert memory_ref(repo) == before
    # Just under the limit is stored, and every reader reads it.
    big = gm.learn("y" * (MAX_RECORD_BYTES - 2048)).memory.id
    memories, skipped = Gitmem.open(repo).memories()
    assert [m.id for m in memories] == [big] and skipped == []


def test_learn_reads_long_content_from_a_file_or_stdin(repo, tmp_path):
    text = "The long design note. " * 10_000  # ~220 KB: more than a command line takes
    path = tmp_path / "note.txt"
    path.write_text(text)
    r = tur(repo, "learn", "--content-file", str(path))
    assert r.code == 0
    assert Gitmem.open(repo).get(r.out.strip()).content == text
    s = tur(repo, "learn", "-", "--type", "insight", stdin="read from stdin\n")
    assert s.code == 0 and Gitmem.open(repo).get(s.out.strip()).content == "read from stdin\n"
    one_line_error(tur(repo, "learn", "both", "--content-file", str(path)), "exactly once")
    one_line_error(tur(repo, "learn", "--content-file", str(tmp_path / "nope")), "no such file")
    huge = tmp_path / "huge.txt"
    huge.write_text("z" * (MAX_RECORD_BYTES + 1))
    before = memory_ref(repo)
    assert one_line_error(tur(repo, "learn", "--content-file", str(huge)), "byte limit")
    assert tur(repo, "learn", "--content-file", str(huge)).code == 2
    assert memory_ref(repo) == before


def test_an_import_whose_record_grows_past_the_limit_when_escaped_is_refused(repo, tmp_path):
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    # A literal block of 1,000,000 bytes (under the limit); the writer escapes each tab as \t.
    (legacy / "tabs.yaml").write_text("type: fact\ncontent: |\n  " + "a\t" * 500_000 + "\n")
    (legacy / "fine.yaml").write_text("type: fact\ncontent: a fine record\n")
    r = tur(repo, "import", str(legacy))
    assert r.code == 0 and r.out.strip() == "imported 1, unchanged 0, failed 1"
    assert "tabs.yaml: record fact-" in r.err and "byte limit" in r.err
    memories, skipped = Gitmem.open(repo).memories()
    assert [m.content for m in memories] == ["a fine record"] and skipped == []


def test_sync_does_not_adopt_a_record_larger_than_a_reader_accepts(origin):
    a, b = Gitmem.open(clone(origin, "a")), Gitmem.open(clone(origin, "b"))
    keep = a.learn("a record everyone can read", now=T1).memory.id
    huge = b"id: fact-ee000001\ntype: fact\ncontent: " + b"w" * MAX_RECORD_BYTES + b"\n"
    write_raw(a, "memories/ee/fact-ee000001.yaml", huge)  # what an old or broken writer pushed
    a.sync()
    result = b.sync()
    rows = {r.memory_id: r for r in result.merged}
    assert rows["fact-ee000001"].status == "refused"
    assert "larger than the 1048576 byte limit" in rows["fact-ee000001"].reason
    assert any("fact-ee000001" in w for w in result.warnings)
    memories, skipped = b.memories()
    assert [m.id for m in memories] == [keep] and skipped == []


# -- 4. secrets outside content -------------------------------------------------------------------------


def test_a_credential_is_refused_in_every_string_a_write_stores(repo, tmp_path):
    mid = tur(repo, "learn", "a clean memory").out.strip()
    before = memory_ref(repo)
    one_line_error(tur(repo, "learn", "another clean one", "--agent", AWS_KEY),
                   "--agent (AWS Access Key on line 1)", "nothing was stored")
    one_line_error(tur(repo, "learn", "clean again", "--harness", f'password = "{AWS_KEY}"'), "--harness")
    one_line_error(tur(repo, "refute", mid, "--reason", f"leaked key {AWS_KEY}"), "--reason")
    one_line_error(tur(repo, "spark", f"next time use {AWS_KEY}"), "the note")
    persona = tmp_path / "persona.yaml"
    persona.write_text(f"identity: reviewer\naws_key: {AWS_KEY}\n")
    one_line_error(tur(repo, "persona", "set", str(persona)), "AWS Access Key on line 2")
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    (legacy / "x.yaml").write_text(f"type: fact\ncontent: clean content\ndeploy_key: {AWS_KEY}\n")
    r = tur(repo, "import", str(legacy))
    assert r.code == 1 and "deploy_key (AWS Access Key on line 1)" in r.err
    assert memory_ref(repo) == before
    assert tur(repo, "spark", f"use {AWS_KEY}", "--allow-secret").code == 0  # the escape hatch


def test_sync_does_not_adopt_a_teammates_record_with_a_credential_and_says_what_to_do(origin):
    a, b = Gitmem.open(clone(origin, "a")), Gitmem.open(clone(origin, "b"))
    a.learn("the base", now=T1)
    a.sync()
    b.sync()
    leaked = a.learn("deploys go through the release bot", agent=AWS_KEY, allow_secret=True).memory.id
    a.sync()
    # A clone that allows it adopts it (with --allow-secret: it is no credential to them).
    c = Gitmem.open(clone(origin, "c"))
    assert c.sync(allow_secret=True).status == "adopted"
    assert leaked in {m.id for m in c.memories()[0]}
    assert b.paths.workdir is not None
    code, out, err = tur(b.paths.workdir, "sync")
    assert code == 0
    assert f"refused           {leaked}" in out
    warning = next(line for line in err.splitlines() if leaked in line)
    assert "provenance.source_agent (AWS Access Key on line 1)" in warning
    assert "rotate" in warning and "--allow-secret" in warning
    assert AWS_KEY not in err + out
    fresh = Gitmem.open(b.paths.workdir)
    assert leaked not in {m.id for m in fresh.memories()[0]}
    # The push took it out of the remote's tree as well (its history keeps it).
    assert fresh.store.tip() == remote_tip(origin)
    assert record_path(leaked) not in set(git(origin, "ls-tree", "-r", "--name-only", MEMORY_REF).split())


# -- 5. a killed writer blocks everyone ------------------------------------------------------------------

_WRAPPER = '''#!{python}
"""A git whose update-ref of refs/tur/memories dies holding the lock, as SIGKILL at its rename leaves it."""
import os, signal, sys

args = sys.argv[1:]
if "update-ref" in args and "refs/tur/memories" in args:
    git_dir = args[args.index("--git-dir") + 1]
    new = args[args.index("refs/tur/memories") + 1]
    lock = os.path.join(git_dir, "refs", "tur", "memories.lock")
    os.makedirs(os.path.dirname(lock), exist_ok=True)
    fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    os.write(fd, (new + "\\n").encode())
    os.close(fd)
    if os.environ.get("KILL_TUR_TOO"):
        os.kill(os.getppid(), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)
os.execv({git!r}, ["git", *args])
'''


@pytest.fixture
def dying_git(tmp_path) -> dict[str, str]:
    """Environment whose PATH finds a ``git`` that is killed at the memory ref's update."""
    bin_dir = tmp_path / "dying-bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "git"
    wrapper.write_text(_WRAPPER.format(python=sys.executable, git=shutil.which("git")))
    wrapper.chmod(0o755)
    return dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def test_a_writer_killed_at_the_ref_update_does_not_block_the_next_writer(repo, dying_git):
    tur(repo, "learn", "before the crash")
    before = memory_ref(repo)
    lock = repo / ".git" / "refs" / "tur" / "memories.lock"
    # The whole writer dies: tur and its git update-ref, killed at the rename.
    crashed = subprocess.run([sys.executable, "-m", "gitmem", "-C", str(repo), "learn", "lost in the crash"],
                             env=dict(dying_git, KILL_TUR_TOO="1"), capture_output=True, text=True)
    assert crashed.returncode == -signal.SIGKILL
    assert lock.exists() and memory_ref(repo) == before
    started = time.monotonic()
    r = tur(repo, "learn", "after the crash")
    assert r.code == 0 and time.monotonic() - started < 5
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"tur: removed the stale lock {lock}")
    assert "is no longer running" in lines[0]
    assert not lock.exists()
    contents = {m.content for m in Gitmem.open(repo).memories()[0]}
    assert contents == {"before the crash", "after the crash"}
    assert git(repo, "fsck", "--no-dangling").strip() == ""


def test_a_killed_update_ref_gives_a_clear_message_and_leaves_no_lock(repo, dying_git, monkeypatch):
    tur(repo, "learn", "before")
    before = memory_ref(repo)
    monkeypatch.setenv("PATH", dying_git["PATH"])
    crashed = tur(repo, "learn", "killed at the rename")
    one_line_error(crashed, "git update-ref refs/tur/memories was killed (SIGKILL) before it moved the ref",
                   "nothing was committed", "run the command again")
    assert crashed.code == 1
    assert not (repo / ".git" / "refs" / "tur" / "memories.lock").exists()
    assert memory_ref(repo) == before
    monkeypatch.undo()
    again = tur(repo, "learn", "killed at the rename")
    assert again.code == 0 and again.err == ""


def test_an_old_lock_with_no_known_owner_is_removed_with_one_line(repo):
    tur(repo, "learn", "first")
    lock = repo / ".git" / "refs" / "tur" / "memories.lock"
    lock.write_text(memory_ref(repo) + "\n")  # what a crashed `git update-ref` by hand leaves
    old = time.time() - 60
    os.utime(lock, (old, old))
    r = tur(repo, "learn", "second")
    assert r.code == 0 and not lock.exists()
    assert r.err.strip().splitlines() == [
        f"tur: removed the stale lock {lock} (it is 60 s old and no git process works in this repository)"]


# -- 6. unbounded notes -----------------------------------------------------------------------------------


def test_persona_and_notes_have_a_size_limit_on_write(repo, tmp_path):
    before = memory_ref(repo)
    one_line_error(tur(repo, "spark", "n" * MAX_NOTE_BYTES), "the continuity note would be", "byte limit")
    persona = tmp_path / "persona.yaml"
    persona.write_text("identity: " + "p" * MAX_PERSONA_BYTES + "\n")
    one_line_error(tur(repo, "persona", "set", str(persona)),
                   f"larger than the {MAX_PERSONA_BYTES} byte limit")
    assert memory_ref(repo) == before
    assert tur(repo, "spark", "n" * (MAX_NOTE_BYTES - 10)).code == 0


def test_wake_reads_only_the_beginning_of_an_oversized_note_and_skips_an_oversized_persona(repo):
    tur(repo, "learn", "a memory")
    note = ("start of the note\n" + "filler line of the huge note\n" * 200_000).encode()  # ~5.8 MB
    plant(repo, ("100644", "continuity/20260101T000000.000000Z-abcdef.md", note),
          ("100644", "persona.yaml", b"identity: " + b"q" * (MAX_PERSONA_BYTES + 1) + b"\n"))
    r = tur(repo, "wake", "--unbounded")
    assert r.code == 0 and "start of the note" in r.out and "a memory" in r.out
    assert len(r.out.encode()) < MAX_NOTE_BYTES + 10_000
    assert r.err.count("continuity/20260101T000000.000000Z-abcdef.md") == 1
    assert "wake reads its beginning only — leave a shorter note with `tur spark`" in r.err
    assert r.err.count("persona.yaml") == 1 and f"larger than the {MAX_PERSONA_BYTES} byte limit" in r.err


# -- 7. a teammate's broken record replaces a good one ---------------------------------------------------


def test_a_teammates_garbage_overwrite_is_not_fast_forwarded(origin):
    a, b = Gitmem.open(clone(origin, "a")), Gitmem.open(clone(origin, "b"))
    mid = a.learn("the queue retries five times", now=T1).memory.id
    a.sync()
    b.sync()
    good = b.store.read_path(b.store.tip(), record_path(mid))
    write_raw(a, record_path(mid), b"id: [garbage\n")
    a.sync()
    result = b.sync()
    rows = {r.memory_id: r for r in result.merged}
    assert rows[mid].status == "invalid" and rows[mid].reason.endswith("kept the last valid version")
    assert len(result.warnings) == 1 and mid in result.warnings[0]
    assert b.get(mid).content == "the queue retries five times"
    woke, skipped = b.wake(now=T1)
    assert "the queue retries five times" in woke.text and skipped == []
    # The valid version went back to the remote, so the teammate gets it back too.
    assert result.pushed and remote_tip(origin) == b.store.tip()
    a.sync()
    assert a.store.read_path(a.store.tip(), record_path(mid)) == good


# -- 8. cache files trusted by size alone ----------------------------------------------------------------


def _swap_in_a_file_of_the_previous_tree(repo: Path, kind: str, read) -> tuple[Path, object]:
    """Read once on a tree of two records and once on another tree of two records; then copy
    the first tree's cache memo of ``kind`` over the second's, as a hand copy between
    trees would. Returns the second tree's file and its honest result."""
    gm = Gitmem.open(repo)
    first = gm.learn("short", now=T1).memory.id
    gm.learn("a much longer memory about the retry policy of the ingestion workers", now=T1)
    tree1 = gm.store.subtree_id(gm.store.tip(), "memories")
    read(Gitmem.open(repo))
    cache = Path(gm.paths.common_dir) / "tur" / "cache"
    theirs = next(iter(cache_glob(cache, kind, f"{tree1}:*"))).read_bytes()
    gm.forget(first)
    gm.learn("another retry policy record, about deploy approvals and the release train", now=T1)
    tree2 = gm.store.subtree_id(gm.store.tip(), "memories")
    assert tree1 != tree2
    honest = read(Gitmem.open(repo))
    assert read(Gitmem.open(repo)) == honest  # asked again: what was derived is saved now
    mine = next(iter(cache_glob(cache, kind, f"{tree2}:*")))
    mine.write_bytes(theirs)  # same row count, same length: only its key tells it apart
    return mine, honest


def test_a_token_cache_file_copied_from_another_tree_is_not_trusted(repo):
    def wake(gm: Gitmem) -> str:
        return gm.wake(token_budget=60, now=T2)[0].text

    mine, honest = _swap_in_a_file_of_the_previous_tree(repo, "tokens", wake)
    result, skipped = Gitmem.open(repo).wake(token_budget=60, now=T2)
    assert result.text == honest
    notices = [s.warning() for s in skipped]
    assert notices == [f"warning: gitmem cache entry tokens {mine.key[:40]} is damaged "
                       "(built for another tree, "
                       "tokenizer or row set); rebuilding it"]


def test_a_recall_index_copied_from_another_tree_is_not_trusted(repo):
    def recall(gm: Gitmem) -> list[tuple[str, float]]:
        return [(h.memory.id, round(h.score, 9)) for h in gm.recall("retry policy")[0].hits]

    mine, honest = _swap_in_a_file_of_the_previous_tree(repo, "recall", recall)
    result, skipped = Gitmem.open(repo).recall("retry policy")
    assert [(h.memory.id, round(h.score, 9)) for h in result.hits] == honest
    assert any(mine.key[:40] in s.warning() and "built for another tree or candidate list" in s.warning()
               for s in skipped)


# -- 9. silent skips --------------------------------------------------------------------------------------


def test_every_broken_layout_is_named_once_with_what_to_do(repo):
    mid = tur(repo, "learn", "a memory that must not vanish silently").out.strip()
    plant(repo, ("100644", "persona.yaml/identity", b"x: 1\n"),
          ("100644", "continuity", b"not a directory\n"),
          ("100644", "notes.txt", b"stray\n"))
    r = tur(repo, "wake")
    assert "must not vanish silently" in r.out
    for path, reason in (("persona.yaml", "is a directory, not a persona file"),
                         ("continuity", "is a file, not the notes directory"),
                         ("notes.txt", "is not part of a memory tree")):
        assert r.err.count(f"skipped {path} ") == 1 and reason in r.err
    assert all("— " in line for line in r.err.strip().splitlines())
    # A `memories` that is a file empties every reader: that is named too, never silent.
    plant(repo, ("100644", record_path(mid), None), ("100644", "memories", b"flat\n"))
    empty = tur(repo, "wake")
    assert empty.err.count("skipped memories ") == 1
    assert "is a file, not the records directory: no record is read" in empty.err
    listed = tur(repo, "list")
    assert "skipped memories " in listed.err
    assert tur(repo, "doctor").code == 1
    assert tur(repo, "doctor", "--fix").code == 0
    assert tur(repo, "wake").err == ""


def test_forget_path_refuses_the_layout_itself(repo):
    mid = tur(repo, "learn", "a memory").out.strip()
    shard = record_path(mid).rsplit("/", 1)[0]
    for path in ("memories", shard, ".gitmem"):
        one_line_error(tur(repo, "forget", "--path", path), "part of the memory tree's layout")
    one_line_error(tur(repo, "forget", "--path", "memories/zz/nothing.yaml"), "no entry")
    one_line_error(tur(repo, "forget"), "exactly one")
    with pytest.raises(InvalidInput):
        Gitmem.open(repo).forget_path("memories")
