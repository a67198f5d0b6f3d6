"""Anchors that survive a formatter run and follow code to other files (the proxy-app fixture).

Memories are learned at the fixture's first commit and verified at HEAD, seven commits
later: (a) a black-style reformat, (b) a class moved to a new module and a module split
into a package, (c) a function moved and edited, (d) a block copied into two files, and a
relative-indentation change in Python. ``fixtures/repos/build_moves.py`` lists the known
answers (``TRAVELS``).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from gitmem.api import Gitmem, Status
from tests.conftest import commit_file, git, tur

ROOT = Path(__file__).resolve().parent.parent


def _builder():
    path = ROOT / "fixtures" / "repos" / "build_moves.py"
    spec = importlib.util.spec_from_file_location("build_moves", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["build_moves"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


BM = _builder()
TRAVELS = {t.key: t for t in BM.TRAVELS}


def _learned(dest: Path, config: str | None = None, keys=None):
    """The fixture with TRAVELS (or ``keys`` of them) learned at ``initial``, HEAD checked out."""
    fixture = BM.build(dest)
    repo = fixture.path
    git(repo, "checkout", "-q", fixture.commits["initial"])
    gm = Gitmem.open(repo)
    ids = {t.key: gm.learn(t.content, file=t.anchor).memory.id
           for t in BM.TRAVELS if keys is None or t.key in keys}
    git(repo, "checkout", "-q", "main")
    if config is not None:
        (repo / ".tur").mkdir(exist_ok=True)
        (repo / ".tur" / "config.yaml").write_text(config)
    return fixture, ids


def _expected(travel, fixture) -> str | None:
    if travel.reason is None:
        return None
    short = {name: sha[:7] for name, sha in fixture.commits.items()}
    return travel.reason.format(**short, at_head=travel.at_head, moved_to=travel.moved_to)


@pytest.fixture(scope="module")
def verified(tmp_path_factory):
    """(fixture, gm, ids, rows by id, outcome) after one verify at HEAD."""
    fixture, ids = _learned(tmp_path_factory.mktemp("mv") / "proxy-app")
    gm = Gitmem.open(fixture.path)
    outcome = gm.verify()
    return fixture, gm, ids, {r.memory_id: r for r in outcome.rows}, outcome


def test_the_fixture_is_the_same_on_every_machine(tmp_path):
    fixture = BM.build(tmp_path / "proxy-app")
    assert fixture.head == BM.HEAD_SHA
    assert list(fixture.commits) == [step.name for step in BM.STEPS]
    # git itself sees the split as deletions and additions, not as a rename
    stat = git(fixture.path, "diff", "-M", "--name-status", fixture.commits["move_proxy"],
               fixture.commits["split_utils"])
    assert "\nR" not in "\n" + stat and "D\tapp/utils.py" in stat


@pytest.mark.parametrize("travel", BM.TRAVELS, ids=lambda t: t.key)
def test_verify_at_head_gives_the_known_status_reason_and_anchor(verified, travel):
    fixture, gm, ids, rows, _ = verified
    row = rows[ids[travel.key]]
    assert (row.status.value, row.reason) == (travel.status, _expected(travel, fixture))
    stored = gm.get(ids[travel.key])
    assert stored.status.value == travel.status
    if travel.status == "fresh":
        assert stored.provenance.context_ref == travel.at_head
        assert stored.provenance.git_sha == fixture.head
        assert stored.decay.reason is None  # how it travelled is in the verify commit
    else:
        assert stored.provenance.context_ref == travel.anchor
        assert stored.decay.reason == row.reason


def test_a_reformatted_range_is_fingerprinted_again_at_its_new_lines(verified):
    fixture, gm, ids, _, _ = verified
    stored = gm.get(ids["report_total"])
    assert gm.verify([ids["report_total"]], write=False).rows[0].status is Status.FRESH
    text = (fixture.path / "app/report.py").read_text().splitlines()
    assert text[5].startswith("def compute_total(items, tax_rate, discount=0.0):")
    assert stored.provenance.context_ref.endswith("#L6-L10")


def test_a_relative_indentation_change_in_python_is_stale(verified):
    fixture, _, ids, rows, _ = verified
    row = rows[ids["audit"]]
    assert row.status is Status.STALE
    assert row.reason == f"line 7 changed in {fixture.commits['dedent_notify'][:7]}"


def test_moved_and_edited_code_names_where_it_went_and_confirm_re_anchors_it_there(tmp_path):
    fixture, ids = _learned(tmp_path / "proxy-app", keys={"discount"})
    gm = Gitmem.open(fixture.path)
    travel = TRAVELS["discount"]
    row = gm.verify().rows[0]
    assert row.status is Status.STALE
    assert travel.moved_to in row.reason
    assert f"tur verify {ids['discount']} --confirm" in row.hint
    confirmed = gm.verify([ids["discount"]], confirm=True).rows[0]
    assert confirmed.status is Status.FRESH
    stored = gm.get(ids["discount"])
    assert stored.provenance.context_ref == travel.moved_to
    assert gm.verify().rows[0].status is Status.FRESH


def test_the_same_text_in_two_files_follows_the_copy_nearest_the_predicted_line(verified):
    fixture, gm, ids, rows, _ = verified
    row = rows[ids["backoff"]]
    assert row.status is Status.FRESH
    assert row.reason.endswith("(nearest of 2 copies, also at app/tasks.py#L8-L13)")
    # the diff puts the deleted lines 6-11 at line 6: jobs.py#L6 is nearer than tasks.py#L8
    assert gm.get(ids["backoff"]).provenance.context_ref == "app/jobs.py#L6-L11"
    assert TRAVELS["backoff"].anchor == "app/helpers.py#L6-L11"


def test_a_second_verify_changes_nothing(verified):
    fixture, _, _, rows, outcome = verified
    assert outcome.commit is not None
    again = Gitmem.open(fixture.path).verify()
    assert again.commit is None
    assert {r.memory_id: (r.status, r.reason) for r in again.rows if r.status is Status.STALE} == {
        r.memory_id: (r.status, r.reason) for r in rows.values() if r.status is Status.STALE}


def test_the_verify_commit_says_how_each_anchor_travelled(verified):
    fixture, gm, ids, _, outcome = verified
    message = next(c.message for c in gm.store.log() if c.sha == outcome.commit.sha)
    proxy = TRAVELS["proxy"]
    assert (f"{ids['proxy']}: fresh (moved to {proxy.at_head} in "
            f"{fixture.commits['move_proxy'][:7]}) -> {proxy.at_head}") in message.splitlines()


def test_the_anchor_trail_names_each_step_and_its_commits(verified):
    fixture, gm, ids, _, _ = verified
    black = fixture.commits["black_reformat"][:7]
    trail = gm.anchor_trail(ids["report_total"])
    assert [s.how for s in trail] == [("learned",), ("reformatted",)]
    assert trail[0].from_ref is None and trail[0].to_ref == TRAVELS["report_total"].anchor
    assert (trail[1].from_ref, trail[1].to_ref) == (TRAVELS["report_total"].anchor,
                                                   TRAVELS["report_total"].at_head)
    assert trail[1].code_commits == (black,)
    moved = gm.anchor_trail(ids["slugify"])
    assert moved[-1].how == ("moved",)
    assert moved[-1].code_commits == (fixture.commits["split_utils"][:7],)
    assert [s.how for s in gm.anchor_trail(ids["chunked"])] == [("learned",), ("shifted",)]
    whole = gm.anchor_trail(ids["report_file"])  # the same anchor, reformatted
    assert [(s.how, s.to_ref) for s in whole] == [(("learned",), "app/report.py"),
                                                  (("reformatted",), "app/report.py")]
    assert [s.how for s in gm.anchor_trail(ids["audit"])] == [("learned",)]


def test_show_prints_how_the_anchor_travelled(verified):
    fixture, _, ids, _, _ = verified
    code, out, err = tur(fixture.path, "show", ids["proxy"])
    assert code == 0, err
    trail = out.split("# how the anchor travelled:\n", 1)[1].splitlines()
    assert trail[0].endswith(f"learned: {TRAVELS['proxy'].anchor}")
    assert trail[1].endswith(f"moved: {TRAVELS['proxy'].anchor} -> {TRAVELS['proxy'].at_head} "
                             f"(moved to {TRAVELS['proxy'].at_head} in "
                             f"{fixture.commits['move_proxy'][:7]})")
    code, out, _ = tur(fixture.path, "show", ids["proxy"], "--format", "json")
    steps = json.loads(out)["anchor_trail"]
    assert [s["how"] for s in steps] == [["learned"], ["moved"]]
    assert steps[1]["to"] == TRAVELS["proxy"].at_head
    code, out, _ = tur(fixture.path, "show", ids["audit"])
    assert "how the anchor travelled" not in out


def test_verify_prints_the_move_with_the_new_anchor(tmp_path):
    fixture, ids = _learned(tmp_path / "proxy-app", keys={"proxy"})
    code, out, err = tur(fixture.path, "verify")
    assert code == 0, err
    at_head = TRAVELS["proxy"].at_head
    assert (f"{ids['proxy']}  fresh  w=1.00  moved to {at_head} in "
            f"{fixture.commits['move_proxy'][:7]} -> {at_head}") in out.splitlines()


def test_white_space_following_can_be_turned_off(tmp_path):
    fixture, ids = _learned(tmp_path / "proxy-app", "verify:\n  ignore_whitespace: false\n")
    rows = {r.memory_id: r for r in Gitmem.open(fixture.path).verify().rows}
    black = fixture.commits["black_reformat"][:7]
    assert (rows[ids["report_total"]].status, rows[ids["report_total"]].reason) == (
        Status.STALE, f"lines 3-9 changed in {black}")
    assert rows[ids["report_file"]].reason == f"changed in {black}"
    assert rows[ids["proxy"]].status is Status.FRESH  # moved without a change: still followed


def test_move_following_can_be_turned_off(tmp_path):
    fixture, ids = _learned(tmp_path / "proxy-app", "verify:\n  follow_moves: false\n")
    rows = {r.memory_id: r for r in Gitmem.open(fixture.path).verify().rows}
    assert rows[ids["proxy"]].reason == f"lines 13-21 changed in {fixture.commits['move_proxy'][:7]}"
    assert rows[ids["slugify"]].reason == f"deleted in {fixture.commits['split_utils'][:7]}"
    assert rows[ids["discount"]].reason.startswith("lines 6-12 changed in")
    assert rows[ids["report_total"]].status is Status.FRESH


def test_outcomes_remembered_under_other_settings_are_not_reused(tmp_path):
    fixture, ids = _learned(tmp_path / "proxy-app", keys={"proxy"})
    assert Gitmem.open(fixture.path).verify(write=False).rows[0].status is Status.FRESH
    (fixture.path / ".tur").mkdir()
    (fixture.path / ".tur" / "config.yaml").write_text("verify:\n  follow_moves: false\n")
    assert Gitmem.open(fixture.path).verify(write=False).rows[0].status is Status.STALE


def test_moved_code_is_not_searched_for_lines_still_in_place(tmp_path, monkeypatch):
    import gitmem.staleness.verdicts

    calls = []
    real = gitmem.staleness.verdicts.find_moved

    def counting(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(gitmem.staleness.verdicts, "find_moved", counting)
    fixture, ids = _learned(tmp_path / "proxy-app", keys={"report_total", "chunked", "audit"})
    rows = Gitmem.open(fixture.path).verify().rows
    assert sorted(r.status.value for r in rows) == ["fresh", "fresh", "stale"]
    assert calls == []


def test_an_uncommitted_edit_of_moved_code_makes_it_stale(tmp_path):
    fixture, ids = _learned(tmp_path / "proxy-app", keys={"proxy"})
    gm = Gitmem.open(fixture.path)
    gm.verify()
    proxy = fixture.path / "app/middleware/proxy.py"
    proxy.write_text(proxy.read_text().replace('("http", "https")', '("https",)'))
    row = Gitmem.open(fixture.path).verify().rows[0]
    assert (row.status, row.reason) == (Status.STALE, "working tree: line 17 modified")


# --- small repositories: one rule each ------------------------------------------------------


def _verify_after(repo: Path, path: str, before: str, after: str, anchor: str):
    commit_file(repo, path, before, "before")
    gm = Gitmem.open(repo)
    memory_id = gm.learn("a fact about this code", file=anchor).memory.id
    commit_file(repo, path, after, "after")
    row = Gitmem.open(repo).verify().rows[0]
    assert row.memory_id == memory_id
    return row, Gitmem.open(repo).get(memory_id)


def test_a_python_block_indented_as_a_whole_is_fresh(repo):
    before = "def f(x):\n    if x:\n        return 1\n    return 2\n"
    after = "class A:\n    def f(x):\n        if x:\n            return 1\n        return 2\n"
    row, stored = _verify_after(repo, "src/a.py", before, after, "src/a.py#L1-L4")
    assert row.status is Status.FRESH and row.reason.startswith("reformatted in ")
    assert stored.provenance.context_ref == "src/a.py#L2-L5"


def test_a_python_line_moved_out_of_its_block_is_stale(repo):
    before = "def f(x):\n    if x:\n        log(x)\n        return 1\n    return 2\n"
    after = "def f(x):\n    if x:\n        log(x)\n    return 1\n    return 2\n"
    row, stored = _verify_after(repo, "src/a.py", before, after, "src/a.py#L1-L5")
    assert row.status is Status.STALE and row.reason.startswith("line 4 changed in ")
    assert stored.provenance.context_ref == "src/a.py#L1-L5"


def test_a_yaml_key_moved_to_another_level_is_stale_but_a_reindent_is_not(repo):
    before = "server:\n  port: 80\n  tls:\n    cert: a.pem\n"
    moved = "server:\n  port: 80\n  tls:\n  cert: a.pem\n"
    row, _ = _verify_after(repo, "deploy.yaml", before, moved, "deploy.yaml#L1-L4")
    assert row.status is Status.STALE
    commit_file(repo, "deploy.yaml", before, "back")
    Gitmem.open(repo).verify()
    commit_file(repo, "deploy.yaml", before.replace("  ", "    "), "4 spaces")
    row = Gitmem.open(repo).verify().rows[0]
    assert row.status is Status.FRESH and row.reason.startswith("reformatted in ")


def test_a_makefile_recipe_indented_with_spaces_instead_of_a_tab_is_stale(repo):
    before = "build:\n\tcc -o app main.c\n"
    after = "build:\n        cc -o app main.c\n"
    row, _ = _verify_after(repo, "Makefile", before, after, "Makefile#L1-L2")
    assert row.status is Status.STALE


def test_a_javascript_call_rewrapped_and_stripped_of_trailing_spaces_is_fresh(repo):
    before = "const x = 1;\nconst total = sum(prices,   \n  taxes, discounts);  \nexport { total };\n"
    after = "const x = 1;\n\nconst total = sum(\n  prices,\n  taxes,\n  discounts\n);\nexport { total };\n"
    row, stored = _verify_after(repo, "src/t.js", before, after, "src/t.js#L2-L3")
    assert row.status is Status.FRESH
    assert stored.provenance.context_ref == "src/t.js#L3-L7"


def test_words_run_together_are_a_change(repo):
    row, _ = _verify_after(repo, "src/t.js", "x = 1;\nreturn a;\n", "x = 1;\nreturna;\n",
                           "src/t.js#L2")
    assert row.status is Status.STALE


def test_a_whole_file_anchor_moved_into_another_file_follows_it(repo):
    helper = "def helper_function(value):\n    return value * 2\n"
    commit_file(repo, "src/helper.py", helper, "helper")
    gm = Gitmem.open(repo)
    memory_id = gm.learn("helper doubles", file="src/helper.py").memory.id
    git(repo, "rm", "-q", "src/helper.py")
    rest = "".join(f"SETTING_{i} = {i}\n" for i in range(20))  # too unlike it for a rename
    commit_file(repo, "src/big.py", "import os\n\n\n" + helper + "\n\n" + rest, "merge helper")
    row = Gitmem.open(repo).verify().rows[0]
    assert row.status is Status.FRESH and row.reason.startswith("moved to src/big.py#L4-L5 in ")
    assert Gitmem.open(repo).get(memory_id).provenance.context_ref == "src/big.py#L4-L5"


def test_a_deleted_block_found_nowhere_keeps_its_reason(repo):
    before = "a = 1\ndef gone_function(value):\n    return value * 2\nb = 2\n"
    row, _ = _verify_after(repo, "src/g.py", before, "a = 1\nb = 2\n", "src/g.py#L2-L3")
    assert row.status is Status.STALE and row.reason.startswith("lines 2-3 changed in ")


def test_a_block_already_elsewhere_before_is_followed_from_the_rest_of_the_tree(repo):
    block = "def shared_helper(value):\n    return value * 2\n"
    commit_file(repo, "src/copy.py", "# vendored\n" + block, "copy")
    commit_file(repo, "src/orig.py", "x = 1\n" + block, "orig")
    gm = Gitmem.open(repo)
    gm.learn("shared_helper doubles", file="src/orig.py#L2-L3")
    commit_file(repo, "src/orig.py", "x = 1\n", "drop the original")
    row = Gitmem.open(repo).verify().rows[0]
    assert row.status is Status.FRESH and row.reason.startswith("moved to src/copy.py#L2-L3 in ")


def test_the_reason_names_the_reformat_commit(repo):
    commit_file(repo, "src/r.py", "def f(a,\n      b):\n    return a\n", "loose")
    gm = Gitmem.open(repo)
    gm.learn("f returns a", file="src/r.py#L1-L3")
    commit_file(repo, "src/r.py", "def f(a, b):\n    return a\n", "black")
    sha = subprocess.run(["git", "rev-parse", "--short=7", "HEAD"], cwd=repo, capture_output=True,
                         text=True, check=True).stdout.strip()
    row = Gitmem.open(repo).verify().rows[0]
    assert (row.status, row.reason) == (Status.FRESH, f"reformatted in {sha}")


def test_a_short_common_line_is_not_followed_to_another_file(repo):
    commit_file(repo, "src/other.py", "def g(value):\n    pass\n", "other")
    row, _ = _verify_after(repo, "src/a.py", "def f(value):\n    return value\n",
                           "def f(value):\n    return None\n", "src/a.py#L2")
    assert row.status is Status.STALE
    # `return value` is now in src/other.py too, but 12 characters are not enough to follow
    commit_file(repo, "src/other.py", "def g(value):\n    return value\n", "other")
    row = Gitmem.open(repo).verify().rows[0]
    assert row.status is Status.STALE and row.reason.startswith("line 2 changed in ")
