"""Structural speed guarantees, without timing: what a command imports, and what a write reads.

A warm ``wake`` or ``recall`` must not parse YAML or load the BPE tables, so it must not even
import ruamel, PyYAML's loader, tiktoken, numpy or bm25s, nor build the pydantic record models;
``tur --help`` must not import the libraries no help text needs. A write must read and
rewrite only the shard tree it touches.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from gitmem.api import Gitmem
from gitmem.record.ids import content_key
from tests.conftest import git

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("ruamel", "yaml", "tiktoken", "numpy", "bm25s", "textual", "watchfiles",
         "detect_secrets", "gitmem.codec", "pygit2", "pydantic", "gitmem.record.models")

PROBE = f"HEAVY = {HEAVY!r}" + """
import io, json, sys
from gitmem.cli import Env, main
out, err = io.StringIO(), io.StringIO()
code = main(sys.argv[1:], Env(out=out, err=err))
heavy = sorted({m for m in sys.modules for h in HEAVY if m == h or m.startswith(h + ".")})
ours = sorted(m for m in sys.modules if m == "gitmem" or m.startswith("gitmem."))
print(json.dumps({"code": code, "heavy": heavy, "out": out.getvalue(), "err": err.getvalue(),
                  "gitmem": ours}))
"""


def run_tur(*args: str) -> dict:
    """Run ``tur`` in a fresh interpreter; report exit code, output and heavy modules loaded."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], env=env, capture_output=True,
                          text=True, check=True)
    *printed, report = proc.stdout.splitlines()  # argparse prints help to sys.stdout itself
    result = json.loads(report)
    result["out"] = "\n".join(printed) + result["out"]
    return result


def top_level(modules: list[str]) -> set[str]:
    return {m.split(".")[0] if not m.startswith("gitmem.") else m for m in modules}


@pytest.fixture
def learned(repo):
    gm = Gitmem.open(repo)
    gm.learn("The queue retries failed jobs with exponential backoff", file="src/app.py#L1-L3")
    gm.learn("Always run migrations before the test suite", type="axiom")
    # Same type as the first, so that their order by weight cannot flip between two runs.
    gm.learn("Billing batches invoices nightly", confidence=0.8)
    gm.set_persona(b"name: test agent\ninvariants:\n  - never push to main\n")
    gm.spark("Was halfway through the retry refactor")
    return repo


def test_help_imports_no_heavy_library(tmp_path):
    result = run_tur("--help")
    assert result["code"] == 0 and "usage: tur" in result["out"]
    assert result["heavy"] == []
    probe = ("import sys; from gitmem.cli import main; main(['--help']);"
             "print(sorted(m for m in ('pygit2', 'pydantic') if m in sys.modules), file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", probe], env=dict(os.environ, PYTHONPATH=str(ROOT)),
                          capture_output=True, text=True, check=True)
    assert proc.stderr.strip() == "[]"


def test_a_warm_wake_reads_no_yaml_and_loads_no_bpe_tables(learned):
    cold = run_tur("-C", str(learned), "wake")
    assert cold["code"] == 0 and "tiktoken" in top_level(cold["heavy"])  # counted once
    warm = run_tur("-C", str(learned), "wake")
    assert warm["code"] == 0
    assert warm["heavy"] == []
    assert warm["out"] == cold["out"] and "never push to main" in warm["out"]
    assert "halfway through the retry refactor" in warm["out"]


def test_a_warm_wake_imports_no_part_of_gitmem_it_does_not_use(learned):
    run_tur("-C", str(learned), "wake")
    warm = run_tur("-C", str(learned), "wake")
    assert warm["code"] == 0 and "never push to main" in warm["out"]
    # Writes, hooks, verify, anchors and the result types load on first use, not for a read;
    # a wake from its plan reads neither the records table (nor its views) nor any index.
    unused = {"gitmem.api.curate", "gitmem.api.edits", "gitmem.api.imports", "gitmem.api.writing",
              "gitmem.api.hooks", "gitmem.api.verify", "gitmem.api.results",
              "gitmem.harness.hooks", "gitmem.record.anchors", "gitmem.sharing.secret_scan",
              "gitmem.context.similarity",
              "gitmem.cache.records", "gitmem.cache.table", "gitmem.cache.views", "gitmem.record.shapes",
              "gitmem.cache.recall_index", "gitmem.cache.statements", "gitmem.cache.distances"}
    assert unused.isdisjoint(warm["gitmem"])
    assert {"gitmem.api", "gitmem.context.wake", "gitmem.cache.wakeplan"} <= set(warm["gitmem"])


def test_a_warm_wake_from_its_plan_loads_no_hashing_json_or_dataclass_module_it_does_not_use(learned):
    probe = ("import sys; from gitmem.cli import main; code = main(sys.argv[1:]);"
             "print(sorted(m for m in ('hashlib', '_hashlib', 'json', 'gitmem.cache.records')"
             " if m in sys.modules), file=sys.stderr)")
    argv = [sys.executable, "-c", probe, "-C", str(learned), "wake"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cold = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    warm = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    assert warm.stdout == cold.stdout and "never push to main" in warm.stdout
    # OpenSSL (hashlib), the JSON module and the records table are for other commands.
    assert warm.stderr.strip() == "[]"


def test_a_warm_recall_reads_no_yaml_and_builds_no_index(learned):
    cold = run_tur("-C", str(learned), "recall", "retry queue jobs")
    # The index is built without bm25s or numpy (it scores as bm25s would, see tests/test_cache.py).
    assert cold["code"] == 0 and not {"bm25s", "numpy"} & top_level(cold["heavy"])
    warm = run_tur("-C", str(learned), "recall", "retry queue jobs")
    assert warm["heavy"] == []
    assert warm["out"] == cold["out"] and "exponential backoff" in warm["out"]
    # A budgeted recall whose output is shorter than its budget in bytes needs no tokenizer.
    budgeted = run_tur("-C", str(learned), "recall", "retry queue jobs", "--token-budget", "500")
    assert budgeted["heavy"] == [] and budgeted["out"] == warm["out"]


def test_a_warm_list_builds_no_record_model(learned):
    cold = run_tur("-C", str(learned), "list")
    warm = run_tur("-C", str(learned), "list")
    assert warm["code"] == 0 and warm["heavy"] == []
    assert warm["out"] == cold["out"] and "exponential backoff" in warm["out"]
    as_json = run_tur("-C", str(learned), "list", "--format", "json")
    assert "gitmem.record.models" in as_json["heavy"]  # full records, as `tur show` gives them
    assert {row["id"] for row in json.loads(as_json["out"])} == {
        line.split()[0] for line in warm["out"].splitlines()[1:]}


def test_a_validated_config_file_is_not_validated_again_until_it_changes(learned):
    config = learned / ".tur" / "config.yaml"
    config.parent.mkdir()
    config.write_text("wake:\n  token_budget: 40\n")
    first = run_tur("-C", str(learned), "wake", "--format", "json")
    assert first["code"] == 0 and "pydantic" in top_level(first["heavy"])
    again = run_tur("-C", str(learned), "wake", "--format", "json")
    assert again["heavy"] == [] and json.loads(again["out"])["budget"] == 40
    config.write_text("wake:\n  token_budget: 50\n")
    changed = run_tur("-C", str(learned), "wake", "--format", "json")
    assert json.loads(changed["out"])["budget"] == 50
    config.write_text("wake:\n  token_budget: lots\n")
    bad = run_tur("-C", str(learned), "wake")
    assert bad["code"] != 0 and "wake.token_budget" in bad["err"]


def test_one_new_memory_costs_one_parse_not_a_cold_read(learned):
    run_tur("-C", str(learned), "wake")
    learned_id = Gitmem.open(learned).learn("A fourth memory about the retry policy").memory.id
    store = Gitmem.open(learned).store
    blob = store.entries(store.tip())[learned_id]
    with closing(sqlite3.connect(store.common_dir / "tur" / "cache" / "cache.sqlite")) as conn:
        conn.execute("DELETE FROM record WHERE blob = ?", (blob,))
        conn.commit()  # as if another tool had written it: the new blob must be read
    after = run_tur("-C", str(learned), "wake")
    assert "A fourth memory" in after["out"]
    # The one new blob is parsed (codec) and counted (tiktoken); nothing else is rebuilt.
    assert {"gitmem.codec", "tiktoken", "yaml"} <= top_level(after["heavy"])
    assert "ruamel" not in top_level(after["heavy"])


def test_a_wake_or_recall_after_a_learn_reads_nothing_the_learn_wrote(learned):
    run_tur("-C", str(learned), "wake")
    run_tur("-C", str(learned), "recall", "retry queue jobs")
    # Words and numbers the cache has counted before: no BPE table to load either.
    learn = run_tur("-C", str(learned), "learn", "The queue retries failed jobs with backoff 2047")
    assert learn["code"] == 0
    after = run_tur("-C", str(learned), "wake")
    assert "jobs with backoff 2047" in after["out"]
    assert after["heavy"] == []  # the learn handed its record over: no YAML, no model, no libgit2
    recalled = run_tur("-C", str(learned), "recall", "backoff 2047")
    assert "jobs with backoff 2047" in recalled["out"] and recalled["heavy"] == []


LEARN_PROBE = """
import io, json, sys
from gitmem.cli import Env, main
from gitmem.cli.process import settle_process
settle_process()  # as the tur entry point does
out, err = io.StringIO(), io.StringIO()
code = main(sys.argv[1:], Env(out=out, err=err))
loaded = sorted({m.split(".")[0] for m in sys.modules} & {"yaml", "ruamel"})
print(json.dumps({"code": code, "loaded": loaded, "err": err.getvalue()}))
"""


def test_a_learn_loads_no_yaml_library_nor_what_it_does_not_use(learned):
    run_tur("-C", str(learned), "wake")  # a table is cached: learn compares with it
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    statement = "The queue retries failed jobs with exponential backoff, twice"
    proc = subprocess.run([sys.executable, "-c", LEARN_PROBE, "-C", str(learned), "learn", statement],
                          env=env, capture_output=True, text=True, check=True)
    report = json.loads(proc.stdout.splitlines()[-1])
    assert report["code"] == 0
    # A near-duplicate is named with its statement, read from the statement rows.
    assert '("The queue retries failed jobs with exponential backoff")' in report["err"]
    # The new record is written without ruamel, the warning read without PyYAML.
    assert report["loaded"] == []


# -- writes read and rewrite one shard ----------------------------------------------------------


def break_other_shards(repo: Path, keep: set[str]) -> None:
    """Point every shard except ``keep`` at tree objects that do not exist.

    A write that read any record outside its own shard would now fail with a missing object.
    """
    listing = git(repo, "ls-tree", "refs/tur/memories:memories")
    lines = [line for line in listing.splitlines() if line.split("\t")[1] in keep]
    for number in range(3):
        name = f"{number:02x}"
        if name not in keep:
            lines.append(f"040000 tree {'%040x' % (0xDEAD0000 + number)}\t{name}")
    memories = subprocess.run(["git", "mktree", "--missing"], cwd=repo, capture_output=True,
                              text=True, check=True, input="\n".join(lines) + "\n").stdout.strip()
    root_lines = [line for line in git(repo, "ls-tree", "refs/tur/memories").splitlines()
                  if not line.endswith("\tmemories")]
    root_lines.append(f"040000 tree {memories}\tmemories")
    root = subprocess.run(["git", "mktree", "--missing"], cwd=repo, capture_output=True,
                          text=True, check=True, input="\n".join(root_lines) + "\n").stdout.strip()
    tip = git(repo, "rev-parse", "refs/tur/memories").strip()
    commit = git(repo, "commit-tree", root, "-p", tip, "-m", "broken shards").strip()
    git(repo, "update-ref", "refs/tur/memories", commit)


def changed_paths(repo: Path, old: str, new: str) -> list[str]:
    out = git(repo, "diff-tree", "-r", "-t", "--name-only", old, new)
    return sorted(out.split())


def test_learn_refute_and_verify_id_touch_only_their_shard(repo):
    gm = Gitmem.open(repo)
    text = "The deploy script tags images with the commit SHA"
    shard = content_key(text)[:2]
    first = gm.learn("Only this shard is read: " + text, file="src/app.py").memory.id
    keep = {shard, first.rsplit("-", 1)[1][:2]}
    break_other_shards(repo, keep)
    before = git(repo, "rev-parse", "refs/tur/memories").strip()

    learned = gm.learn(text)
    assert learned.created and learned.memory.id.endswith(content_key(text))
    after_learn = git(repo, "rev-parse", "refs/tur/memories").strip()
    assert changed_paths(repo, before, after_learn) == sorted(
        ["memories", f"memories/{shard}", f"memories/{shard}/{learned.memory.id}.yaml"])

    assert gm.learn(text + ".").created is False  # same content: re-verified in place
    memory, _ = gm.refute(first, "superseded by the new deploy script")
    assert memory.refutation is not None
    outcome = gm.verify([first[:9]])
    assert [row.memory_id for row in outcome.rows] == [first]
    assert gm.get(learned.memory.id).content == text
    gm.forget(learned.memory.id)
    assert gm.store.blob_id_at(gm.store.tip(), f"memories/{shard}/{learned.memory.id}.yaml") is None


def test_import_writes_many_files_in_one_commit(repo, tmp_path):
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    for number in range(120):
        (legacy / f"m{number}.yaml").write_text(
            f'id: "concept-{number}"\ntype: fact\ncontent: "Imported fact number {number}"\n')
    result = Gitmem.open(repo).import_legacy([legacy])
    assert len(result.imported) == 120 and result.failed == []
    assert git(repo, "rev-list", "--count", "refs/tur/memories").strip() == "1"
    again = Gitmem.open(repo).import_legacy([legacy])
    assert again.commit is None and len(again.unchanged) == 120


def run_hook(repo: Path, hook: str, payload: dict) -> dict:
    """``tur hook HOOK`` in a fresh interpreter with ``payload`` on stdin (see :func:`run_tur`)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", PROBE, "-C", str(repo), "hook", hook], env=env,
                          input=json.dumps(payload), capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.splitlines()[-1])


def test_warm_hooks_load_no_heavy_library(learned):
    turn = {"session_id": "speed", "prompt": "how does the queue retry failed jobs"}
    tool = {"session_id": "speed", "tool_name": "Read",
            "tool_input": {"file_path": str(learned / "src" / "app.py")}}
    for hook, payload in (("pre-turn", turn), ("session-start", {})):  # cold: build the cache
        run_hook(learned, hook, payload)
    for hook, payload in (("pre-turn", turn), ("pre-tool", tool), ("session-start", {})):
        warm = run_hook(learned, hook, {**payload, "session_id": f"warm-{hook}"})
        assert warm["code"] == 0 and warm["err"] == "", warm
        assert warm["out"], hook  # it did its work
        assert warm["heavy"] == [], (hook, warm["heavy"])


def test_the_first_wake_after_a_code_commit_loads_no_history(learned):
    from tests.conftest import commit_file

    warm = run_tur("-C", str(learned), "wake")
    commit_file(learned, "src/other.py", "x = 1\n", "a new code commit")
    after = run_tur("-C", str(learned), "wake")
    # distances to the new HEAD come from those to its parent, read from its loose commit
    assert after["code"] == 0 and after["heavy"] == []
    assert after["out"] == warm["out"] and "never push to main" in after["out"]


PLUGINS_PROBE = """
import json, os, sys
from gitmem.cli.process import settle_process
settle_process()
from gitmem.record.models import Memory
memory = Memory(id="fact-ab12cd34", type="fact", content="x", confidence=1)
print(json.dumps({"switch": os.environ.get("PYDANTIC_DISABLE_PLUGINS"), "confidence": memory.confidence}))
"""


@pytest.mark.parametrize("switch", [None, "__all__", "some-plugin"])
def test_tur_turns_pydantic_plugins_off_unless_the_user_chose(switch):
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    env["PYTHONPATH"] = str(ROOT)
    if switch is not None:
        env["PYDANTIC_DISABLE_PLUGINS"] = switch
    proc = subprocess.run([sys.executable, "-c", PLUGINS_PROBE], env=env, capture_output=True, text=True,
                          check=True)
    report = json.loads(proc.stdout)
    assert report["switch"] == (switch or "__all__")  # pydantic's own switch; a user's setting is kept
    assert report["confidence"] == 1.0


def test_the_tur_entry_point_learns_and_reads_back_as_main_does(learned):
    """``python -m gitmem`` (the console script's ``run``): plugins off, nothing collected at exit."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("PYDANTIC_DISABLE_PLUGINS", None)

    def tur(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "gitmem", "-C", str(learned), *args], env=env,
                              capture_output=True, text=True, check=False)

    learn = tur("learn", "Entry point note: it's #1")
    assert learn.returncode == 0 and learn.stdout.startswith("fact-"), learn.stderr
    shown = tur("show", learn.stdout.strip())
    assert shown.returncode == 0 and "Entry point note: it's #1" in shown.stdout
    bad = tur("learn", "")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1


COLLECTOR_PROBE = """
import atexit, gc, json, sys
default = gc.get_threshold()
import gitmem.api, gitmem.cli  # importing the library leaves the application's collector alone
imported = gc.get_threshold()
atexit.register(lambda: print(json.dumps({"default": default, "imported": imported,
                                          "tur": gc.get_threshold()})))
sys.argv = ["tur", "--version"]
gitmem.cli.run()
"""


def test_only_the_tur_process_collects_its_young_objects_less_often():
    from gitmem.cli.process import YOUNG_GENERATION_THRESHOLD

    proc = subprocess.run([sys.executable, "-c", COLLECTOR_PROBE], env=dict(os.environ, PYTHONPATH=str(ROOT)),
                          capture_output=True, text=True, check=True)
    report = json.loads(proc.stdout.splitlines()[-1])
    assert report["imported"] == report["default"]
    assert report["tur"] == [YOUNG_GENERATION_THRESHOLD, *report["default"][1:]]
    assert report["default"][0] < YOUNG_GENERATION_THRESHOLD


def test_a_learn_imports_no_part_of_gitmem_it_does_not_use(learned):
    allowed = run_tur("-C", str(learned), "learn", "--allow-secret", "The retry queue caps backoff at 60 s")
    assert allowed["code"] == 0, allowed["err"]
    # Neither the weights, the context builder, nor the values of status and verify: a write
    # creates none of their dataclasses. Without the scan, no detect-secrets either.
    unused = {"gitmem.api.context", "gitmem.api.weights", "gitmem.api.runs", "gitmem.sharing.trust",
              "gitmem.api.status_results", "gitmem.api.verify", "gitmem.context.wake",
              "gitmem.context.recall"}
    assert unused.isdisjoint(allowed["gitmem"])
    assert not {"detect_secrets", "tiktoken", "ruamel", "yaml"} & top_level(allowed["heavy"])
    scanned = run_tur("-C", str(learned), "learn", "The retry queue logs each attempt")
    assert scanned["code"] == 0, scanned["err"]
    assert "detect_secrets" in top_level(scanned["heavy"])
    assert unused.isdisjoint(scanned["gitmem"])


HEAP_PROBE = """
import ctypes, json
from gitmem.cli.process import release_free_heap

def anon_kib():
    for line in open("/proc/self/status"):
        if line.startswith("RssAnon:"):
            return int(line.split()[1])

# 60 MB of mid-size buffers (glibc's heap, not mmap), every 50th kept so that the heap
# cannot shrink from its top: what a write's reads leave behind in a long-running server.
buffers = [bytearray(1500) for _ in range(40_000)]
kept = buffers[::50]
del buffers
before = anon_kib()
released = release_free_heap()
print(json.dumps({"released": released, "before": before, "after": anon_kib(), "kept": len(kept)}))
"""


def _glibc() -> bool:
    try:
        return sys.platform == "linux" and bool(os.confstr("CS_GNU_LIBC_VERSION"))
    except (AttributeError, ValueError, OSError):
        return False


@pytest.mark.skipif(not _glibc(), reason="glibc's malloc_trim, on Linux")
def test_a_server_gives_the_heap_its_reads_freed_back_to_the_system():
    proc = subprocess.run([sys.executable, "-c", HEAP_PROBE], env=dict(os.environ, PYTHONPATH=str(ROOT)),
                          capture_output=True, text=True, check=True)
    report = json.loads(proc.stdout)
    assert report["released"] is True
    # Most of the 60 MB freed was still in the process's RSS, and is not once released.
    assert report["before"] - report["after"] > 30_000, report

