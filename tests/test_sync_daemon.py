"""Sync over a real network protocol: ``git daemon`` on 127.0.0.1 with receive-pack enabled."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from gitmem.api import Gitmem
from gitmem.errors import RemoteError
from gitmem.store import MEMORY_REF
from tests.conftest import commit_file, git

STARTUP_SECONDS = 60.0  # bounds a failure only: the wait ends when the daemon listens


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_listening(port: int, proc: subprocess.Popen, deadline: float) -> None:
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"git daemon exited early: {proc.stderr.read().decode()}")  # type: ignore[union-attr]
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"git daemon did not listen on 127.0.0.1:{port} within {STARTUP_SECONDS}s")


def _stop(proc: subprocess.Popen) -> None:
    # The daemon forks a child per connection; they share its process group (its own session).
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)
    if proc.stderr is not None:
        proc.stderr.close()


class Daemon:
    """A running ``git daemon`` serving one directory of bare repositories."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.port = _free_port()
        self.proc = subprocess.Popen(
            ["git", "daemon", "--reuseaddr", "--export-all", "--enable=receive-pack",
             "--informative-errors", "--listen=127.0.0.1", f"--port={self.port}",
             f"--base-path={base}", str(base)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
        )
        try:
            _wait_listening(self.port, self.proc, time.monotonic() + STARTUP_SECONDS)
        except BaseException:
            _stop(self.proc)
            raise

    def url(self, name: str) -> str:
        return f"git://127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        _stop(self.proc)


@pytest.fixture
def daemon(tmp_path):
    base = tmp_path / "served"
    base.mkdir()
    remote = base / "team.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    seed = tmp_path / "seed"
    seed.mkdir()
    git(seed, "init", "-q", "-b", "main")
    commit_file(seed, "src/app.py", "print('hi')\n", "initial")
    git(seed, "push", "-q", str(remote), "main")
    served = Daemon(base)
    try:
        yield served
    finally:
        served.stop()


def test_two_clones_share_memories_over_the_git_protocol(daemon, tmp_path):
    paths = []
    for name in ("a", "b"):
        dest = tmp_path / name
        git(tmp_path, "clone", "-q", daemon.url("team.git"), str(dest))
        paths.append(dest)
    a, b = (Gitmem.open(p) for p in paths)
    shared = a.learn("the api is served on port 8080").memory.id
    assert a.sync().status == "pushed"
    assert b.sync().status == "adopted"
    only_a = a.learn("a learned this").memory.id
    only_b = b.learn("b learned this").memory.id
    a.refute(shared, "moved to 9090")
    assert a.sync().status == "pushed"
    merged = b.sync()
    assert (merged.status, merged.pushed) == ("merged", True)
    assert a.sync().status == "fast-forward"
    served_tip = git(daemon.base / "team.git", "rev-parse", MEMORY_REF).strip()
    assert a.store.tip() == b.store.tip() == served_tip
    assert {m.id for m in a.memories()[0]} == {shared, only_a, only_b}
    assert b.get(shared).refutation.reason == "moved to 9090"

    daemon.stop()
    b.learn("learned while the server is down")
    before = b.store.tip()
    with pytest.raises(RemoteError) as err:
        b.sync()
    assert err.value.message.startswith(f"cannot fetch {MEMORY_REF} from origin (git://127.0.0.1:")
    assert b.store.tip() == before
