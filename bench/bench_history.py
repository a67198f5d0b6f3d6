"""History benchmark: a team's year on the memory ref (20,000 commits over 2,000 records).

Builds, deterministically (fixed dates, authors and seed) and with ``git fast-import``, a
repository whose ``refs/tur/memories`` holds 20,000 commits: learns of 2,000 records,
verifies that touch one to four records (some moving an anchor), refutes, confidence
changes, and sync merges of teammates' short side branches (one every ~40 commits). Then
it times, for this code and for ``--before``'s in the same run (each on its own copy):

* ``tur show ID`` (a whole process) for four ids: learned first and never changed since
  (the walk to the root finds one commit), a hot record, a median one and one learned last;
  beside it ``git log --format=%H refs/tur/memories -- PATH`` in the same repository (the
  ratio is against that), and the same ``git log`` without a commit-graph;
* the TUI's history call (``Gitmem.history`` + ``Gitmem.anchor_trail``, what the detail
  pane loads), in process;
* ``tur sync`` after one learn on each side: two clones of a bare remote, each learns,
  the first syncs (a push), then the second (fetch, merge, push) is timed; against the
  same sync on a one-commit history of the same 2,000 records.

Each repository is used by gitmem once (one untimed ``tur learn``, or the adopting
``tur sync`` of a clone) before it is timed: the state a team's clone is in.

Run from the repository root::

    python bench/bench_history.py                        # this code only
    git -C /work/main worktree add --detach /tmp/before-hist main
    python bench/bench_history.py --before /tmp/before-hist
    python bench/bench_history.py --commits 5000 --runs 3 # faster

Targets (after): ``tur show`` and the TUI call within 3x the ``git log -- PATH`` of the
same repository; the sync at 20,000 commits within 2x the one-commit sync.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scale import (
    Sample,
    _code_history,
    _git,
    check_template,
    compile_sources,
    run_once,
    synthetic_records,
)

ROOT = Path(__file__).resolve().parent.parent
SEED = 26
START = 1_740_787_200  # 2025-03-01T00:00:00Z: a year of commits from here
TEAM = [("Ana Lima", "ana@example.com"), ("Ben Okafor", "ben@example.com"),
        ("Chen Wei", "chen@example.com"), ("Dana Roth", "dana@example.com"),
        ("Eli Moreau", "eli@example.com"), ("Femi Adeyemi", "femi@example.com")]
SHOW_TARGET = 3.0
SYNC_TARGET = 2.0

# The TUI's detail pane: history, then the anchor trail from it (tui/detail.py).
_API_PROBE = """
import json, resource, sys, time
from gitmem.api import Gitmem
gm = Gitmem.open(sys.argv[1])
warm = sys.argv[2]  # a record not measured: the store, the cache and the modules loaded, as in the TUI
gm.anchor_trail(warm, gm.history(warm))
def cpu():
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
out = {}
for memory_id in sys.argv[3:]:
    started, used = time.perf_counter(), cpu()
    history = gm.history(memory_id)
    gm.anchor_trail(memory_id, history)
    out[memory_id] = [time.perf_counter() - started, cpu() - used, len(history)]
print(json.dumps(out))
"""


# -- the year of history --------------------------------------------------------------------------

def _set(text: str, key: str, value: str) -> str:
    """``text`` (a record's YAML) with the line ``  key: ...`` or ``key: ...`` set to ``value``."""
    pattern = re.compile(rf"^(\s*){re.escape(key)}: .*$", re.M)
    return pattern.sub(lambda m: f"{m.group(1)}{key}: {value}", text, count=1)


def _iso(ts: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


@dataclass
class _Year:
    stream: bytes
    final: dict[str, str]       # path -> YAML of the last commit's tree
    touched: dict[str, int]     # path -> commits that changed it (as gitmem lists them)
    order: list[str]            # paths in learn order
    commits: int


class _YearBuilder:
    """Writes the fast-import stream of the year, one commit at a time (see the module docstring)."""

    def __init__(self, commits: int, records: int, code_shas: list[str]) -> None:
        from gitmem.record.ids import shard_of

        pool = synthetic_records(records, code_shas, seed=SEED)
        check_template(pool)
        self.rng = random.Random(SEED)
        self.commits, self.code_shas = commits, code_shas
        self.pending = [(f"memories/{shard_of(r.id)}/{r.id}.yaml", r.id, r.text.decode()) for r in pool]
        self.tree: dict[str, str] = {}
        self.ids: dict[str, str] = {}
        self.order: list[str] = []
        self.touched: dict[str, int] = {}
        self.stream = bytearray()
        self.step = (365 * 86400) // commits
        self.made = self.mark = self.tip = 0

    def commit(self, ref: str, who: tuple[str, str], message: str, changes: dict[str, str],
               parent: int, merge: int = 0) -> int:
        self.made += 1
        self.mark += 1
        when = START + self.made * self.step
        raw = message.encode()
        out = self.stream
        out += f"commit {ref}\nmark :{self.mark}\n".encode()
        person = f"{who[0]} <{who[1]}> {when} +0000"
        out += f"author {person}\ncommitter {person}\n".encode()
        out += b"data %d\n%s\n" % (len(raw), raw)
        if parent:
            out += f"from :{parent}\n".encode()
        if merge:
            out += f"merge :{merge}\n".encode()
        if self.mark == 1:
            out += b"M 100644 inline .gitmem\ndata 10\nformat: 1\n\n"
        for path, text in sorted(changes.items()):
            data = text.encode()
            out += b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode(), len(data), data)
        return self.mark

    def when(self) -> int:
        return START + (self.made + 1) * self.step

    def change(self, state: dict[str, str], path: str) -> tuple[str, str]:
        """One change to the record at ``path`` in ``state``: (its kind, its line of the message)."""
        rng, text, memory_id = self.rng, state[path], self.ids[path]
        self.touched[path] = self.touched.get(path, 0) + 1
        roll = rng.random()
        if roll < 0.80 or "refutation:" in text:
            text = _set(text, "last_verified_at", f'"{_iso(self.when())}"')
            text = _set(text, "git_sha", f'"{rng.choice(self.code_shas)}"')
            ref = re.search(r"context_ref: (\S+)#L(\d+)-L(\d+)", text)
            line = f"{memory_id}: fresh"
            if ref and rng.random() < 0.1:
                shift = rng.randint(1, 9)
                new = f"{ref.group(1)}#L{int(ref.group(2)) + shift}-L{int(ref.group(3)) + shift}"
                text = _set(text, "context_ref", new)
                line += f" (lines moved by {shift} in {rng.choice(self.code_shas)[:7]}) -> {new}"
            state[path] = text
            return "verify", line
        if roll < 0.95:
            state[path] = _set(text, "confidence", rng.choice(["0.9", "0.8", "0.7", "0.95"]))
            return "confidence", f"confidence {memory_id}"
        state[path] = _set(text, "staleness_status", "refuted") + (
            "refutation:\n  reason: contradicted by the load test\n  by: Ana Lima <ana@example.com>\n"
            f'  at: "{_iso(self.when())}"\n')
        return "refute", f"refute {memory_id}: contradicted by the load test"

    def pick(self, state: dict[str, str], avoid: set[str]) -> str:
        while True:  # mildly skewed to the records learned early (they are read, so verified, more)
            path = self.order[int(len(self.order) * self.rng.random() ** 1.2)]
            if path not in avoid and path in state:
                return path

    def learn(self, who: tuple[str, str]) -> None:
        path, memory_id, text = self.pending.pop(0)
        self.tree[path], self.ids[path] = text, memory_id
        self.order.append(path)
        self.touched[path] = 1
        content = text.split("\n")[3].removeprefix("content: ")
        self.tip = self.commit("refs/tur/memories", who, f"learn {memory_id}: {content[:60]}", {path: text},
                               self.tip)

    def changes(self, who: tuple[str, str]) -> None:
        """A verify of one to four records, or one refute or confidence change."""
        count = min(self.rng.choice([1, 1, 1, 2, 2, 3, 4]), len(self.order))
        chosen: dict[str, str] = {}
        lines, kind = [], "verify"
        for _ in range(count):
            path = self.pick(self.tree, set(chosen))
            kind, line = self.change(self.tree, path)
            chosen[path] = self.tree[path]
            lines.append(line)
            if kind != "verify":  # a refute or a confidence change is a commit of its own
                break
        message = lines[0] if len(lines) == 1 and kind != "verify" else (
            f"verify: {len(lines)} changed\n\n" + "\n".join(lines))
        self.tip = self.commit("refs/tur/memories", who, message, chosen, self.tip)

    def side_branch(self, who: tuple[str, str]) -> None:
        """A teammate's one to three commits, merged by a sync after the main line moved on."""
        side_state = dict(self.tree)
        mate = self.rng.choice([t for t in TEAM if t != who])
        side: dict[str, str] = {}
        side_tip = self.tip
        for _ in range(self.rng.randint(1, 3)):
            path = self.pick(side_state, set(side))
            _, line = self.change(side_state, path)
            side[path] = side_state[path]
            side_tip = self.commit("refs/tur/side", mate, line, {path: side[path]}, side_tip)
        for _ in range(self.rng.randint(1, 2)):
            path = self.pick(self.tree, set(side))
            _, line = self.change(self.tree, path)
            self.tip = self.commit("refs/tur/memories", who, line, {path: self.tree[path]}, self.tip)
        self.tree.update(side)
        lines = "\n".join(f"merged {self.ids[p]}: changed on origin" for p in sorted(side))
        self.tip = self.commit("refs/tur/memories", who, f"sync: merge origin (0 added, {len(side)} merged, "
                               f"0 conflicts resolved)\n\n{lines}\n", side, self.tip, side_tip)

    def run(self) -> _Year:
        rng = self.rng
        while self.made < self.commits:
            who = rng.choice(TEAM)
            left = self.commits - self.made
            if self.pending and (not self.order or rng.random() < len(self.pending) / left * 1.02):
                self.learn(who)
            elif len(self.order) > 40 and left > 8 and rng.random() < 1 / 40:
                self.side_branch(who)
            else:
                self.changes(who)
        return _Year(bytes(self.stream), self.tree, self.touched, self.order, self.made)


def build(work: Path, commits: int, records: int) -> tuple[Path, Path, _Year]:
    """``work/year`` (the 20,000-commit memory ref) and ``work/flat`` (its last tree, one commit)."""
    year_repo, flat_repo = work / "year", work / "flat"
    for repo in (year_repo, flat_repo):
        shutil.rmtree(repo, ignore_errors=True)
        repo.mkdir(parents=True)
        _git(repo, "init", "-q", "-b", "main")
        _git(repo, "config", "user.name", "Bench")
        _git(repo, "config", "user.email", "bench@example.com")
        _git(repo, "fast-import", "--quiet", stdin=_code_history())
        _git(repo, "checkout", "-q", "-f", "main")
    shas = _git(year_repo, "rev-list", "main").split()
    year = _YearBuilder(commits, records, shas).run()
    _git(year_repo, "fast-import", "--quiet", stdin=year.stream)
    _git(year_repo, "update-ref", "-d", "refs/tur/side")
    flat = bytearray(b"commit refs/tur/memories\n")
    flat += f"committer Bench <bench@example.com> {START} +0000\n".encode()
    message = f"import {len(year.final):,} memories".encode()
    flat += b"data %d\n%s\nM 100644 inline .gitmem\ndata 10\nformat: 1\n\n" % (len(message), message)
    for path, text in sorted(year.final.items()):
        flat += b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode(), len(text.encode()), text.encode())
    _git(flat_repo, "fast-import", "--quiet", stdin=bytes(flat))
    return year_repo, flat_repo, year


# -- measuring ------------------------------------------------------------------------------------

GIT = shutil.which("git") or "git"


@dataclass
class Code:
    """One checkout whose ``gitmem`` is measured: its label and root (on ``PYTHONPATH``)."""

    label: str
    root: Path

    def tur(self, repo: Path, *args: str) -> list[str]:
        return [sys.executable, "-m", "gitmem", "-C", str(repo), *args]

    def run(self, repo: Path, *args: str) -> Sample:
        """One timed ``tur`` process (wall and CPU seconds, git's children included)."""
        return run_once(self.tur(repo, *args), root=self.root)

    def _env(self) -> dict[str, str]:
        return dict(os.environ, PYTHONPATH=str(self.root), PYTHONSAFEPATH="1", PYTHONDONTWRITEBYTECODE="1")

    def call(self, repo: Path, *args: str) -> str:
        proc = subprocess.run(self.tur(repo, *args), env=self._env(), capture_output=True, text=True,
                              check=False)
        if proc.returncode != 0:
            sys.exit(f"bench: tur {' '.join(args)} failed ({self.label}): {proc.stderr[-2000:]}")
        return proc.stdout

    def api(self, repo: Path, warm: str, ids: list[str]) -> dict[str, list[float]]:
        """``{id: [wall, cpu, commits]}`` of the TUI's history call, in one process warmed on ``warm``."""
        proc = subprocess.run([sys.executable, "-c", _API_PROBE, str(repo), warm, *ids], env=self._env(),
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            sys.exit(f"bench: the history call failed ({self.label}): {proc.stderr[-2000:]}")
        return json.loads(proc.stdout)


def _copy(source: Path, target: Path) -> Path:
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target, symlinks=True)
    return target


def _git_log(repo: Path, path: str) -> Sample:
    return run_once([GIT, "-C", str(repo), "log", "--format=%H", "refs/tur/memories", "--", path])


def _graph_files(repo: Path) -> list[str]:
    info = repo / ".git" / "objects" / "info"
    found = sorted(info.glob("commit-graph*")) + sorted(info.glob("commit-graphs/*"))
    return [str(p.relative_to(repo / ".git")) for p in found]


def _without_graph(repo: Path, target: Path) -> Path:
    copy = _copy(repo, target)
    info = copy / ".git" / "objects" / "info"
    shutil.rmtree(info / "commit-graphs", ignore_errors=True)
    (info / "commit-graph").unlink(missing_ok=True)
    return copy


def _clones(code: Code, seed: Path, work: Path) -> tuple[Path, Path]:
    """A bare remote holding ``seed``'s memory ref and two clones that adopted it (untimed)."""
    remote = work / "remote.git"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    _git(work, "init", "-q", "--bare", str(remote))
    _git(seed, "push", "-q", str(remote), "main", "refs/tur/memories")
    clones = []
    for name, (person, email) in (("a", TEAM[0]), ("b", TEAM[1])):
        clone = work / name
        _git(work, "clone", "-q", str(remote), str(clone))
        _git(clone, "config", "user.name", person)
        _git(clone, "config", "user.email", email)
        code.call(clone, "remote", "setup")
        code.call(clone, "sync")
        clones.append(clone)
    return clones[0], clones[1]


def sync_rounds(code: Code, seed: Path, work: Path, runs: int) -> list[Sample]:
    """The second clone's ``tur sync`` (fetch, merge, push) after one learn on each side, ``runs`` times."""
    a, b = _clones(code, seed, work)
    samples = []
    for i in range(runs):
        code.call(a, "learn", f"Round {i}: the exporter flushes metric samples every {i + 10} seconds")
        code.call(b, "learn", f"Round {i}: the importer batches upload chunks in groups of {i + 100}")
        code.call(a, "sync")
        samples.append(code.run(b, "sync"))
        code.call(a, "sync")  # a takes the merge: the next round starts level
    return samples


@dataclass
class Timing:
    """Medians of one measurement: wall and CPU seconds."""

    wall: float
    cpu: float

    @classmethod
    def of(cls, samples: list[Sample] | list[tuple[float, float]]) -> Timing:
        pairs = [(s.wall, s.cpu) if isinstance(s, Sample) else s for s in samples]
        return cls(statistics.median(w for w, _ in pairs), statistics.median(c for _, c in pairs))


@dataclass
class Shown:
    """One record's figures for one code."""

    commits: int
    show: Timing
    api: Timing
    log: Timing
    log_plain: Timing
    show_flat: Timing


def show_and_log(code: Code, repo: Path, plain: Path, flat: Path, paths: list[str], warm: str,
                 runs: int) -> dict[str, Shown]:
    """``tur show ID``, the TUI call and ``git log -- PATH`` (with and without a graph), per record.

    ``tur show ID`` also on ``flat``, the same records in one commit: what the command
    costs besides the history.
    """
    ids = [p.rsplit("/", 1)[1][:-5] for p in paths]
    show: dict[str, list[Sample]] = {i: [] for i in ids}
    log: dict[str, list[Sample]] = {i: [] for i in ids}
    log_plain: dict[str, list[Sample]] = {i: [] for i in ids}
    show_flat: dict[str, list[Sample]] = {i: [] for i in ids}
    api: dict[str, list[tuple[float, float]]] = {i: [] for i in ids}
    commits: dict[str, int] = {}
    for _ in range(runs):
        for memory_id, path in zip(ids, paths, strict=True):
            show[memory_id].append(code.run(repo, "show", memory_id))
            log[memory_id].append(_git_log(repo, path))
            log_plain[memory_id].append(_git_log(plain, path))
            show_flat[memory_id].append(code.run(flat, "show", memory_id))
        for memory_id, (wall, cpu, count) in code.api(repo, warm, ids).items():
            api[memory_id].append((wall, cpu))
            commits[memory_id] = int(count)
    return {i: Shown(commits[i], Timing.of(show[i]), Timing.of(api[i]), Timing.of(log[i]),
                     Timing.of(log_plain[i]), Timing.of(show_flat[i])) for i in ids}


def _pick_paths(year: _Year) -> list[tuple[str, str]]:
    counts = sorted(year.touched.items(), key=lambda kv: (kv[1], kv[0]))
    oldest_once = next(p for p in year.order if year.touched.get(p) == 1)
    return [("the oldest record changed once", oldest_once), ("the hottest", counts[-1][0]),
            ("a median one", counts[len(counts) // 2][0]), ("the last learned", year.order[-1])]


@dataclass
class Measured:
    """Everything measured for one code."""

    first: Sample
    graph: list[str]
    shown: dict[str, Shown]
    year_sync: Timing
    flat_sync: Timing


def measure(code: Code, work: Path, year_repo: Path, flat_repo: Path, paths: list[str], warm: str,
            runs: int) -> Measured:
    """Every figure for ``code``, each on its own copies of the repositories."""
    repo = _copy(year_repo, work / f"show-{code.label}")
    first = code.run(repo, "learn", "The history benchmark's first learn on this clone")
    graph = _graph_files(repo)
    plain = _without_graph(repo, work / f"nograph-{code.label}")
    flat = _copy(flat_repo, work / f"showflat-{code.label}")
    code.call(flat, "learn", "The history benchmark's first learn on this clone")
    shown = show_and_log(code, repo, plain, flat, paths, warm, runs)
    print(f"{code.label}: show and log measured", file=sys.stderr, flush=True)
    year_sync = Timing.of(sync_rounds(code, year_repo, work / f"sync-year-{code.label}", runs))
    flat_sync = Timing.of(sync_rounds(code, flat_repo, work / f"sync-flat-{code.label}", runs))
    print(f"{code.label}: sync measured", file=sys.stderr, flush=True)
    return Measured(first, graph, shown, year_sync, flat_sync)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=20_000)
    parser.add_argument("--records", type=int, default=2_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--work", type=Path, default=Path("/tmp/tur-bench-history"))
    parser.add_argument("--before", type=Path, metavar="DIR",
                        help="a checkout of the code to compare with (git worktree add --detach DIR REV)")
    args = parser.parse_args(argv)
    codes = [Code("after", ROOT)]
    if args.before is not None:
        codes.insert(0, Code("before", args.before.resolve()))
    for code in codes:
        compile_sources(code.root)
    started = time.perf_counter()
    year_repo, flat_repo, year = build(args.work, args.commits, args.records)
    print(f"built {year.commits:,} commits over {len(year.final):,} records in "
          f"{time.perf_counter() - started:.1f} s ({args.work})", file=sys.stderr, flush=True)
    picks = _pick_paths(year)
    paths = [p for _, p in picks]
    warm = next(p for p in year.order if p not in paths).rsplit("/", 1)[1][:-5]
    rows = {code.label: measure(code, args.work, year_repo, flat_repo, paths, warm, args.runs)
            for code in codes}
    report(rows, picks, year, args)
    return 0


def _s(t: Timing) -> str:
    return f"{t.wall:.3f} / {t.cpu:.3f}"


def report(rows: dict[str, Measured], picks: list[tuple[str, str]], year: _Year,
           args: argparse.Namespace) -> None:
    print(f"\n## History at {year.commits:,} memory-ref commits, {len(year.final):,} records "
          f"(median of {args.runs} runs; wall / CPU seconds, git's included)\n")
    print("| record | commits | code | `tur show ID` | the same on a one-commit history | TUI call "
          "(history + anchor_trail) | `git log -- PATH` | show / log (CPU) | TUI call / log (CPU) | "
          "`git log` without commit-graph |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for what, path in picks:
        memory_id = path.rsplit("/", 1)[1][:-5]
        for label, measured in rows.items():
            row = measured.shown[memory_id]
            show_ratio, api_ratio = row.show.cpu / row.log.cpu, row.api.cpu / row.log.cpu
            flags = "" if label != "after" else " " + ("ok" if api_ratio <= SHOW_TARGET else "MISSED")
            print(f"| {what} (`{memory_id}`) | {row.commits} | {label} | {_s(row.show)} | "
                  f"{_s(row.show_flat)} | {_s(row.api)} | "
                  f"{_s(row.log)} | {show_ratio:.1f}x | {api_ratio:.1f}x{flags} | {_s(row.log_plain)} |")
    print(f"\n## `tur sync` after one learn on each side (median of {args.runs} runs; wall / CPU seconds)\n")
    print(f"| code | {year.commits:,}-commit history | one-commit history | ratio (wall) | ratio (CPU) |")
    print("|---|---:|---:|---:|---:|")
    for label, measured in rows.items():
        y, f = measured.year_sync, measured.flat_sync
        flag = "" if label != "after" else " " + ("ok" if y.cpu / f.cpu <= SYNC_TARGET else "MISSED")
        print(f"| {label} | {_s(y)} | {_s(f)} | {y.wall / f.wall:.2f}x | {y.cpu / f.cpu:.2f}x{flag} |")
    print("\n| code | first `tur learn` on the imported history (wall / CPU s) | commit-graph files "
          "after it |")
    print("|---|---:|---|")
    for label, measured in rows.items():
        first = Timing(measured.first.wall, measured.first.cpu)
        print(f"| {label} | {_s(first)} | {', '.join(measured.graph) or 'none'} |")
    before = f" --before {args.before}" if args.before else ""
    print(f"\nrerun: python bench/bench_history.py --commits {args.commits} --runs {args.runs}{before}")


if __name__ == "__main__":
    raise SystemExit(main())
