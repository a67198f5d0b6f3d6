"""The last faults, each as a kind: unknown formats, full disks, held locks, missing objects, huge notes.

Every test runs against real git (a real ``git update-ref --stdin`` holding the ref lock, a
loose object file deleted, a process whose file-size limit makes writes fail as a full disk
does) and checks what a user sees: one line on stderr, a non-zero exit, nothing stored lost.
"""

from __future__ import annotations

import errno
import json
import os
import random
import resource
import shutil
import signal
import socket
import string
import subprocess
import sys
import time
from collections.abc import Callable

import pytest

from gitmem.api import Gitmem
from gitmem.cache.reader import record_path
from gitmem.errors import RefLocked, disk_full
from gitmem.store import MEMORY_REF, Mutation
from tests.conftest import git, memory_ref, tur
from tests.test_integrity import one_line_error, plant

# -- a newer format ---------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [("wake",), ("recall", "--query", "queue"), ("list",), ("status",),
                                     ("learn", "another"), ("verify",)])
def test_a_format_marker_of_another_version_is_refused_by_readers_like_writers(repo, command):
    tur(repo, "learn", "The queue uses WAL mode")
    assert "WAL mode" in tur(repo, "wake").out  # warm: the old marker's version is memoised
    plant(repo, ("100644", ".gitmem", b"format: 99\n"), message="a newer gitmem")
    before = memory_ref(repo)
    line = one_line_error(tur(repo, *command), "has format '99', this gitmem reads 1")
    assert line.startswith("tur: error: memory ref ") and "upgrade gitmem" in line
    assert memory_ref(repo) == before


# -- a lock a live process holds ----------------------------------------------------------------------


def test_a_lock_held_by_a_live_git_update_ref_stdin_is_never_removed(repo):
    tur(repo, "learn", "first")
    tip = memory_ref(repo)
    holder = subprocess.Popen(["git", "update-ref", "--stdin"], cwd=repo, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert holder.stdin is not None and holder.stdout is not None
        holder.stdin.write(f"start\nupdate {MEMORY_REF} {tip} {tip}\nprepare\n")
        holder.stdin.flush()
        assert holder.stdout.readline() == "start: ok\n"
        assert holder.stdout.readline() == "prepare: ok\n"  # git holds the lock now
        lock = repo / ".git" / "refs" / "tur" / "memories.lock"
        assert lock.exists()
        old = time.time() - 60  # older than any lock git holds for itself
        os.utime(lock, (old, old))
        gm = Gitmem.open(repo)
        with pytest.raises(RefLocked) as err:
            gm.store.transact(lambda base: Mutation({"memories/ab/fact-ab000001.yaml": b"x\n"}, "x"),
                              lock_wait_seconds=0.2)
        assert f"git process {holder.pid} (git update-ref --stdin) may hold it" in err.value.message
        assert lock.exists() and memory_ref(repo) == tip
        holder.stdin.write("commit\n")
        holder.stdin.close()
        assert holder.stdout.readline() == "commit: ok\n"
    finally:
        holder.kill() if holder.poll() is None else None
        holder.wait()
    assert not lock.exists()
    # Once git is done, the next writer goes through with nothing to remove.
    after = tur(repo, "learn", "second")
    assert after.code == 0 and after.err == ""


def test_an_old_lock_is_removed_once_its_git_process_is_gone(repo):
    tur(repo, "learn", "first")
    holder = subprocess.Popen(["git", "update-ref", "--stdin"], cwd=repo, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdin is not None and holder.stdout is not None
    tip = memory_ref(repo)
    holder.stdin.write(f"start\nupdate {MEMORY_REF} {tip} {tip}\nprepare\n")
    holder.stdin.flush()
    assert holder.stdout.readline() == "start: ok\n" and holder.stdout.readline() == "prepare: ok\n"
    holder.kill()  # SIGKILL: git leaves its lock behind
    holder.wait()
    lock = repo / ".git" / "refs" / "tur" / "memories.lock"
    assert lock.exists()
    old = time.time() - 60
    os.utime(lock, (old, old))
    r = tur(repo, "learn", "second")
    assert r.code == 0 and not lock.exists()
    assert r.err.strip().splitlines() == [
        f"tur: removed the stale lock {lock} (it is 60 s old and no git process works in this repository)"]


def test_lock_owner_files_of_gone_processes_are_pruned(repo):
    tur(repo, "learn", "first")
    locks = repo / ".git" / "tur" / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    host = socket.gethostname()
    (locks / ("1" * 40)).write_text(f"{host} {gone.pid}\n")  # what a killed tur leaves
    (locks / ("2" * 40)).write_text(f"{host} {os.getpid()}\n")  # a live owner
    (locks / ("3" * 40)).write_text(f"another-host {gone.pid}\n")  # cannot be asked: kept
    assert tur(repo, "learn", "second").code == 0
    assert sorted(p.name for p in locks.iterdir()) == ["2" * 40, "3" * 40]


# -- a full disk ------------------------------------------------------------------------------------------


def _incompressible_words(count: int) -> str:
    """``count`` characters of random lowercase words: no credential shape, and zlib cannot shrink them."""
    rng = random.Random(29)
    letters = string.ascii_lowercase
    return " ".join("".join(rng.choice(letters) for _ in range(6)) for _ in range(count // 7))


def _no_room(limit: int) -> Callable[[], None]:
    def apply() -> None:  # in the child: a write past ``limit`` bytes fails with EFBIG, as on a full disk
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def test_a_write_that_finds_no_room_is_one_line_and_stores_nothing(repo):
    tur(repo, "learn", "a memory before the disk filled up")
    before = memory_ref(repo)
    text = _incompressible_words(6_000)
    done = subprocess.run([sys.executable, "-m", "gitmem", "-C", str(repo), "learn", text],
                          preexec_fn=_no_room(2048), capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 1 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("tur: error: no space left on device: ") and "nothing was stored" in lines[0]
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
    assert memory_ref(repo) == before
    assert subprocess.run(["git", "fsck", "--no-progress"], cwd=repo, capture_output=True).returncode == 0
    # With room again, the same learn goes through.
    assert tur(repo, "learn", text).code == 0


@pytest.mark.parametrize("exc", [OSError(errno.ENOSPC, "No space left on device", "/r/.git/objects/ab/x"),
                                 OSError(errno.EDQUOT, "Disk quota exceeded"),
                                 OSError("failed to write out file: File too large"),
                                 RuntimeError("fatal: unable to write new index: No space left on device")])
def test_every_wording_of_no_room_becomes_the_one_line(exc):
    full = disk_full(exc)
    assert full is not None and full.message.startswith("no space left on device: ")
    assert disk_full(OSError(errno.EACCES, "Permission denied")) is None


# -- one missing object -------------------------------------------------------------------------------


def test_a_missing_record_object_is_named_and_the_rest_is_served(repo):
    kept = tur(repo, "learn", "alpha: the queue uses WAL mode").out.strip()
    lost = tur(repo, "learn", "beta: the cache lives in Redis").out.strip()
    blob = git(repo, "rev-parse", f"{MEMORY_REF}:{record_path(lost)}").strip()
    shutil.rmtree(repo / ".git" / "tur" / "cache")  # a cold read: every record blob is read
    (repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    for command in (("list",), ("wake",), ("recall", "--query", "queue WAL"), ("status",)):
        r = tur(repo, *command)
        assert r.code == 0, (command, r.err)
        assert "beta" not in r.out
        assert r.err.count(f"({lost}): unreadable: object {blob[:12]} is missing from the repository") == 1
        if command != ("status",):
            assert kept in r.out
    assert "2 fresh" not in tur(repo, "status").out
    # Writing still works, and the new memory is served with the others.
    new = tur(repo, "learn", "gamma: deploys need two approvals").out.strip()
    assert new in tur(repo, "wake").out
    assert tur(repo, "doctor").code == 1


# -- raw control bytes in what an agent reads ---------------------------------------------------------

#: ESC sequences (clear screen, colour), a one-byte CSI, BEL, a bidi override and an invisible tag.
HOSTILE = "queue note \x1b[2J\x1b[31mred\x1b[0m \x9b2J \x07 \u202eevil \U000e0041hidden"
_RAW = ("\x1b", "\x9b", "\x07", "\u202e", "\U000e0041")


def _clean(text: str) -> bool:
    return not any(raw in text for raw in _RAW)


def test_piped_wake_recall_and_hook_output_escape_raw_control_bytes(repo):
    mid = tur(repo, "learn", HOSTILE).out.strip()
    tur(repo, "spark", "note \x1b]0;title\x07 continuity \u202eflip")
    woke = tur(repo, "wake").out
    assert mid in woke and _clean(woke)
    assert "\\x1b[2J\\x1b[31mred\\x1b[0m \\x9b2J \\x07 \\u202eevil \\U000e0041hidden" in woke
    assert "note \\x1b]0;title\\x07 continuity \\u202eflip" in woke
    recalled = tur(repo, "recall", "--query", "queue note").out
    assert mid in recalled and _clean(recalled)
    hooked = tur(repo, "hook", "pre-turn", "--format", "json", stdin=json.dumps({
        "session_id": "s-1", "hook_event_name": "UserPromptSubmit", "prompt": "queue note red evil"})).out
    context = json.loads(hooked)["hookSpecificOutput"]["additionalContext"]
    assert mid in context and _clean(context)
    woke_json = json.loads(tur(repo, "wake", "--format", "json").out)
    assert _clean(woke_json["text"])


def test_mcp_wake_and_recall_text_escape_raw_control_bytes(repo, tmp_path):
    from tests.test_mcp import run

    mid = tur(repo, "learn", HOSTILE).out.strip()

    async def scenario(session):
        woke = await session.call_tool("wake", {"token_budget": 500})
        recalled = await session.call_tool("recall", {"query": "queue note"})
        return [block.text for result in (woke, recalled) for block in result.content]

    texts = run(repo, tmp_path, scenario)
    assert any(mid in text for text in texts) and all(_clean(text) for text in texts)


# -- a usage error names the command's own help -----------------------------------------------------


@pytest.mark.parametrize(("args", "help_of"), [(("list", "--bogus"), "tur list"),
                                               (("list", "x", "y"), "tur list"),
                                               (("hook", "pre-turn", "--zzz"), "tur hook pre-turn"),
                                               (("--bogus",), "tur")])
def test_an_unknown_argument_points_to_the_help_of_its_command(repo, args, help_of):
    result = tur(repo, *args, stdin="")
    assert result.code == (0 if args[0] == "hook" else 2)  # a harness reads a hook's 2 as "block"
    line = result.err.strip()
    assert "\n" not in line and "unrecognized arguments" in line and "Traceback" not in line
    assert line.endswith(f"(see `{help_of} --help`)")


# -- a huge continuity note -----------------------------------------------------------------------------


@pytest.mark.parametrize("storage", ["loose", "packed"])
def test_a_100_mb_continuity_note_is_read_bounded_on_a_cold_wake(repo, storage):
    tur(repo, "learn", "a memory beside the note")
    note = b"first line of a continuity note someone pushed\n" + b"more of the same note\n" * 4_600_000
    assert len(note) > 100_000_000
    plant(repo, ("100644", "continuity/29991231T000000.000000Z-ffffff.md", note), message="huge note")
    del note
    if storage == "packed":
        git(repo, "repack", "-adq")
    shutil.rmtree(repo / ".git" / "tur" / "cache")  # cold: nothing of the note is remembered
    command = [sys.executable, "-m", "gitmem", "-C", str(repo), "wake"]
    done = subprocess.run([sys.executable, "-c", _PEAK, *command], capture_output=True, text=True,
                          check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "first line of a continuity note" in done.stdout
    assert "larger than the 65536 byte limit; wake reads its beginning only" in done.stderr
    peak_kb = int(done.stderr.strip().splitlines()[-1].removeprefix("peak_kb="))
    # A cold wake loads the tokenizer (~90 MB); reading the note whole took 400 MB.
    assert peak_kb < 180_000, f"wake used {peak_kb} KB for a 100 MB note"


#: Runs the command in argv, then prints its peak resident set (KB, Linux) as the last stderr line.
_PEAK = """
import resource, subprocess, sys
code = subprocess.run(sys.argv[1:]).returncode
print(f"peak_kb={resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}", file=sys.stderr)
sys.exit(code)
"""


def test_for_reader_is_idempotent_so_every_output_can_pass_through_it():
    from gitmem.context.render import render_hook
    from gitmem.text import for_reader

    once = for_reader(HOSTILE + "\nsecond\tline\n")
    assert _clean(once) and for_reader(once) == once and "\nsecond\tline\n" in once
    hooked = json.loads(render_hook("stale: " + HOSTILE, "PreToolUse", "json"))
    assert _clean(hooked["hookSpecificOutput"]["additionalContext"])
    assert _clean(render_hook(HOSTILE, "PreToolUse", "text"))
