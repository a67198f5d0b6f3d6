"""The queue-service fixture repository is deterministic and its EXPECTATIONS match git."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

BUILDER = Path(__file__).resolve().parents[1] / "fixtures" / "repos" / "build_fixture.py"


def _load_builder():
    # fixtures/ is not a package; load the script by path (the demo does the same).
    spec = importlib.util.spec_from_file_location("build_fixture", BUILDER)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


bf = _load_builder()

STEP_NAMES = [
    "initial", "docs_failure_handling", "port_change", "queue_helpers_above", "retry_rename",
    "auth_oauth", "health_endpoint", "drop_legacy_export", "readme_update", "ci_workflow",
    "store_tests",
]

# Words each anchored region must contain at `initial`, so an anchor cannot silently
# point at the wrong lines.
EVIDENCE = {
    "port": ["port = 8080"],
    "jwt": ["def issue_token", "jwt.encode", "algorithm=ALGORITHM"],
    "legacy_export": ["def export_done", "csv.writer"],
    "retry": ["def retry", "jitter", "cap: float = 30.0"],
    "wal": ["def connect", "journal_mode=WAL", "busy_timeout=5000", "return conn"],
    "api_prefix": ['API_PREFIX = "/api/v1"', "ROUTES = {", "}"],
    "queue_config": ["[queue]", 'path = "data/queue.db"', "max_attempts = 3"],
    "readme": ["JWT", "port 8080"],
}


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True
    ).stdout


def _parse(anchor: str) -> tuple[str, int | None, int | None]:
    match = re.fullmatch(r"(?P<path>[^#]+)(?:#L(?P<start>\d+)-L(?P<end>\d+))?", anchor)
    assert match, anchor
    start, end = match["start"], match["end"]
    return match["path"], int(start) if start else None, int(end) if end else None


def _lines(repo: Path, sha: str, path: str) -> list[str]:
    return _git(repo, "show", f"{sha}:{path}").splitlines()


def _region(repo: Path, sha: str, anchor: str) -> list[str]:
    path, start, end = _parse(anchor)
    lines = _lines(repo, sha, path)
    return lines if start is None else lines[start - 1:end]


def _path_exists(repo: Path, sha: str, path: str) -> bool:
    return _git(repo, "ls-tree", "--name-only", sha, "--", path).strip() == path


def _by_key(key: str):
    return next(e for e in bf.EXPECTATIONS if e.key == key)


@pytest.fixture(scope="module")
def fixture_repo(tmp_path_factory):
    return bf.build(tmp_path_factory.mktemp("fx") / "queue-service")


def test_two_builds_give_identical_shas_and_the_pinned_head(fixture_repo, tmp_path):
    again = bf.build(tmp_path / "again")
    assert again.commits == fixture_repo.commits
    assert list(fixture_repo.commits) == STEP_NAMES
    assert fixture_repo.head == bf.HEAD_SHA == "2212d5a20a8aea8190d9418518e5a80bace18550"
    assert fixture_repo.commits["initial"] == "1763fc965d7bee99d5b7eaac2299f6249667e14a"
    assert _git(again.path, "rev-parse", "HEAD").strip() == bf.HEAD_SHA
    assert _git(again.path, "status", "--porcelain") == ""


def test_hostile_user_git_config_does_not_change_the_shas(tmp_path, monkeypatch, isolated_env):
    hooks = tmp_path / "templates" / "hooks"
    hooks.mkdir(parents=True)
    hook = hooks / "commit-msg"
    hook.write_text("#!/bin/sh\necho 'Signed-off-by: Hook <h@example.com>' >> \"$1\"\n")
    hook.chmod(0o755)
    hostile = tmp_path / "hostile.gitconfig"
    hostile.write_text(
        "[user]\n\tname = Someone Else\n\temail = else@example.com\n"
        "[commit]\n\tgpgsign = true\n[core]\n\tautocrlf = true\n"
        f"[init]\n\ttemplateDir = {hooks.parent}\n\tdefaultBranch = trunk\n"
    )
    (isolated_env / ".gitconfig").write_text(hostile.read_text())
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(hostile))
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Env Author")
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2030-01-01T00:00:00+00:00")
    assert bf.build(tmp_path / "r").head == bf.HEAD_SHA


def test_commits_are_one_day_apart_from_2026_01_05(fixture_repo):
    dates = _git(fixture_repo.path, "log", "--reverse", "--format=%aI %cI %an <%ae>").splitlines()
    expected = [f"2026-01-{5 + i:02d}T10:00:00+00:00" for i in range(11)]
    assert [d.split()[0] for d in dates] == expected
    assert [d.split()[1] for d in dates] == expected
    assert {d.split(" ", 2)[2] for d in dates} == {"Quinn Queue <quinn@queue-service.example>"}


def test_script_prints_step_and_sha_lines(tmp_path):
    out = subprocess.run(
        [sys.executable, str(BUILDER), str(tmp_path / "cli")],
        capture_output=True, text=True, check=True,
    ).stdout
    rows = [line.split() for line in out.splitlines()]
    assert [r[0] for r in rows] == STEP_NAMES
    assert rows[-1][1] == bf.HEAD_SHA


def test_script_refuses_a_non_empty_destination(tmp_path):
    (tmp_path / "keep.txt").write_text("x")
    result = subprocess.run(
        [sys.executable, str(BUILDER), str(tmp_path)], capture_output=True, text=True
    )
    assert result.returncode == 1
    assert "exists and is not an empty directory" in result.stderr
    assert (tmp_path / "keep.txt").read_text() == "x"


def test_expectations_cover_the_required_cases():
    outcome = Counter((e.status, e.reason, e.anchor is None) for e in bf.EXPECTATIONS)
    assert outcome == Counter([
        ("stale", "changed", False), ("stale", "changed", False),
        ("stale", "deleted", False),
        ("fresh", "renamed", False),
        ("fresh", "moved", False),
        ("fresh", None, False), ("fresh", None, False),
        ("stale", "changed", False),  # whole-file anchor (README.md)
        ("fresh", None, True), ("fresh", None, True),
    ])
    assert sorted(e.type for e in bf.EXPECTATIONS if e.anchor is None) == ["axiom", "preference"]
    assert [e.anchor for e in bf.EXPECTATIONS if e.anchor and "#" not in e.anchor] == ["README.md"]
    assert len({e.key for e in bf.EXPECTATIONS}) == len(bf.EXPECTATIONS)
    for e in bf.EXPECTATIONS:
        assert 0.0 <= e.confidence <= 1.0
        assert (e.anchor_at_head is not None) == (e.status == "fresh" and e.anchor is not None)


@pytest.mark.parametrize("key", sorted(EVIDENCE))
def test_anchor_exists_at_initial_with_the_stated_content(fixture_repo, key):
    exp = _by_key(key)
    path, start, end = _parse(exp.anchor)
    lines = _lines(fixture_repo.path, fixture_repo.commits["initial"], path)
    if start is not None:
        assert 1 <= start <= end <= len(lines)
    region = "\n".join(_region(fixture_repo.path, fixture_repo.commits["initial"], exp.anchor))
    for word in EVIDENCE[key]:
        assert word in region, (key, word)


def test_moved_range_has_the_original_lines_at_its_new_place(fixture_repo):
    exp = _by_key("wal")
    repo, c = fixture_repo.path, fixture_repo.commits
    before = _region(repo, c["initial"], exp.anchor)
    assert _region(repo, bf.HEAD_SHA, exp.anchor_at_head) == before
    assert _region(repo, bf.HEAD_SHA, exp.anchor) != before
    # A pure insertion: nothing removed from the file, 8 lines added above the range.
    diff = _git(repo, "diff", "-U0", c["initial"], bf.HEAD_SHA, "--", "src/queue/store.py")
    hunks = [h for h in diff.splitlines() if h.startswith("@@")]
    assert hunks == ["@@ -7,0 +8,8 @@ from pathlib import Path"]


def test_renamed_file_is_followed_and_its_range_is_unchanged(fixture_repo):
    exp = _by_key("retry")
    repo, c = fixture_repo.path, fixture_repo.commits
    assert not _path_exists(repo, bf.HEAD_SHA, "src/util/retry.py")
    log = _git(repo, "log", "--follow", "--format=%H", "--name-status", bf.HEAD_SHA, "--",
               "src/util/backoff.py")
    assert f"{c['retry_rename']}\n\nR090\tsrc/util/retry.py\tsrc/util/backoff.py" in log
    assert _region(repo, bf.HEAD_SHA, exp.anchor_at_head) == _region(repo, c["initial"], exp.anchor)


@pytest.mark.parametrize("key", ["port", "jwt"])
def test_stale_line_ranges_no_longer_hold_their_original_lines(fixture_repo, key):
    exp = _by_key(key)
    repo, c = fixture_repo.path, fixture_repo.commits
    before = _region(repo, c["initial"], exp.anchor)
    path, _, _ = _parse(exp.anchor)
    after = _lines(repo, bf.HEAD_SHA, path)
    assert _region(repo, bf.HEAD_SHA, exp.anchor) != before
    # Not merely moved: the original block occurs nowhere in the file at HEAD.
    windows = [after[i:i + len(before)] for i in range(len(after))]
    assert before not in windows


def test_deleted_anchor_file_is_gone_at_head(fixture_repo):
    repo, c = fixture_repo.path, fixture_repo.commits
    assert _path_exists(repo, c["initial"], "src/queue/legacy_export.py")
    assert not _path_exists(repo, bf.HEAD_SHA, "src/queue/legacy_export.py")
    deleted = _git(repo, "log", "--diff-filter=D", "--format=%H", "--",
                   "src/queue/legacy_export.py")
    assert deleted.split() == [c["drop_legacy_export"]]


def test_whole_file_anchor_changed(fixture_repo):
    repo, c = fixture_repo.path, fixture_repo.commits
    changed = _git(repo, "log", "--format=%H", f"{c['initial']}..HEAD", "--", "README.md")
    assert changed.split() == [c["readme_update"]]


@pytest.mark.parametrize("key", ["api_prefix", "queue_config"])
def test_unchanged_ranges_stay_in_place_although_their_file_changed(fixture_repo, key):
    exp = _by_key(key)
    repo, c = fixture_repo.path, fixture_repo.commits
    assert exp.anchor_at_head == exp.anchor
    assert _region(repo, bf.HEAD_SHA, exp.anchor) == _region(repo, c["initial"], exp.anchor)
    path, _, _ = _parse(exp.anchor)
    assert _git(repo, "diff", "--stat", c["initial"], bf.HEAD_SHA, "--", path) != ""


def test_head_is_ten_commits_after_initial(fixture_repo):
    initial = fixture_repo.commits["initial"]
    count = _git(fixture_repo.path, "rev-list", "--count", f"{initial}..HEAD")
    assert count.strip() == "10"


LEGACY = Path(__file__).resolve().parents[1] / "fixtures" / "legacy" / ".tur" / "memories"


def _legacy(name: str) -> dict:
    import yaml

    return yaml.safe_load((LEGACY / f"{name}.yaml").read_text())


def _as_memory(data: dict):
    from gitmem.record.models import Memory

    # Legacy ids (concept-<hex>) are not gitmem ids; an import assigns new ones.
    return Memory.model_validate({**data, "id": f"{data['type']}-{data['id'][-8:]}"})


def test_legacy_records_are_four_concept_ids_that_validate_once_re_ided():
    names = sorted(p.stem for p in LEGACY.glob("*.yaml"))
    assert names == [
        "concept-3c7d9e10", "concept-5b1e4f77", "concept-8f2a1b9c", "concept-a41c0d2e",
    ]
    for name in names:
        data = _legacy(name)
        assert data["id"] == name
        assert _as_memory(data).content.strip()


def test_legacy_record_without_provenance_is_unanchored_with_full_confidence():
    from gitmem.record.models import Status

    data = _legacy("concept-3c7d9e10")
    assert set(data) == {"id", "type", "scope", "content"}
    memory = _as_memory(data)
    assert memory.confidence == 1.0
    assert memory.status == Status.UNANCHORED
    assert memory.half_life_days is None


def test_legacy_record_with_comments_keeps_unknown_keys():
    text = (LEGACY / "concept-5b1e4f77.yaml").read_text()
    assert text.startswith("# Written by tur 0.9")
    assert "# lowered after the 2026-08 refactor review" in text
    memory = _as_memory(_legacy("concept-5b1e4f77"))
    assert memory.model_extra == {
        "tags": ["architecture", "layering"], "okf": {"version": 2, "cluster": "layering"},
    }
    assert memory.provenance.git_sha is None


def test_legacy_naive_timestamps_are_taken_as_utc():
    memory = _as_memory(_legacy("concept-a41c0d2e"))
    assert memory.provenance.observed_at.isoformat() == "2026-08-25T18:05:00+00:00"
    assert memory.provenance.context_ref == "CONTRIBUTING.md"
    assert memory.decay.staleness_status == "stale"
