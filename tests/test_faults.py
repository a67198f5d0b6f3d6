"""The last faults, each as a kind: unknown formats, full disks, held locks, missing objects, huge notes.

Every test runs against real git (a real ``git update-ref --stdin`` holding the ref lock, a
loose object file deleted, a process whose file-size limit makes writes fail as a full disk
does) and checks what a user sees: one line on stderr, a non-zero exit, nothing stored lost.
"""

from __future__ import annotations

import pytest

from tests.conftest import memory_ref, tur
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
