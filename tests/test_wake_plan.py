"""A warm wake reads the plan of its state (a ``wake`` memo) and gives exactly a cold wake (issue 16).

The plan keeps only the memories that can still be shown, with what wake reads of them; the
weights are taken for the wake's own time. Each test changes the state in one way (a write,
a sync, a code commit, an uncommitted edit, the settings, the identity, the clock), then
checks that the first wake does not use the plan of the state before, that the next one
reads the new plan, and that both equal a cold wake (cache deleted) for every budget, in
the library and through ``tur wake`` / ``tur hook session-start``. A plan of another key,
a damaged one and one built later than the wake are never used.
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gitmem.api import Gitmem
from gitmem.cache import cache_dir
from gitmem.cache.wakeplan import plan_name
from gitmem.store import Mutation, Store
from tests.conftest import CacheEntry, cache_entry, clone, commit_file, git, legacy_records, tur

BASE = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
"""The fixture's memories are observed up to this time; wakes happen at it or later."""
LATER = BASE + timedelta(days=30)
"""Far enough on that the fast-decaying facts of the fixture fall below the threshold."""

BUDGETS = (
    {},
    {"token_budget": 120},
    {"token_budget": 0},
    {"max_chars": 700},
    {"token_budget": 45},
    {"token_budget": 300, "max_chars": 900},
)
"""The budgets of every comparison: default, small, unbounded, a character cap, tiny, both."""

APP_EDITED = "".join(f"line {i}\n" if i != 3 else "line three, edited\n" for i in range(1, 21))


def cache_of(repo: Path) -> Path:
    return cache_dir(Store.discover(repo))


def from_plan(gm: Gitmem) -> bool:
    """Whether the last wake of ``gm`` came from its plan (it never reads the records table)."""
    return not gm.records.cache._built("_tables")


def plan_path(repo: Path) -> CacheEntry:
    """The entry of the plan of the repository's current state."""
    gm = Gitmem.open(repo)
    key = gm._context.plan_key(gm.tip())
    assert key is not None
    return cache_entry(cache_of(repo), "wake", plan_name(key))


def observed(result, skipped) -> tuple:
    """What a wake gives, assembly record aside (a wake from its plan builds that from the table)."""
    return (result.text, result.tokens, result.budget, result.omitted, result.shown,
            [s.warning() for s in skipped])


def wake(repo: Path, now: datetime, **budget) -> tuple[bool, tuple, object]:
    """A wake from a new facade (as a new process has): (from the plan?, what it gives, result)."""
    gm = Gitmem.open(repo)
    result, skipped = gm.wake(now=now, **budget)
    planned = from_plan(gm)
    return planned, observed(result, skipped), result


def cold(repo: Path, now: datetime, **budget) -> tuple[tuple, object]:
    """A wake with the whole read cache deleted first."""
    shutil.rmtree(cache_of(repo), ignore_errors=True)
    _, seen, result = wake(repo, now, **budget)
    return seen, result


def assert_planned_equals_cold(repo: Path, now: datetime) -> None:
    """For every budget, a wake from the plan of the current state equals a cold wake."""
    expected = {i: cold(repo, now, **budget) for i, budget in enumerate(BUDGETS)}
    Gitmem.open(repo).wake(now=now)  # saves the plan
    assert plan_path(repo).exists()
    for i, budget in enumerate(BUDGETS):
        planned, seen, result = wake(repo, now, **budget)
        assert seen == expected[i][0], budget
        assert result == expected[i][1], budget  # the assembly record too
        if not budget:
            assert planned


def assert_changed_state_equals_cold(repo: Path, now: datetime) -> None:
    """After a change: the first wake reads no plan (its state has none yet), then as above."""
    planned, first, _ = wake(repo, now)
    assert not planned
    assert first == cold(repo, now)[0]
    assert_planned_equals_cold(repo, now)


@pytest.fixture
def planned(repo):
    """Memories of every shape, learned over the month before BASE, and the plan of BASE saved.

    ``sup`` (a fact) supersedes ``old`` (a preference): at BASE the fact still weighs enough
    to hide ``old``; a month later it does not, and ``old`` is shown again.
    """
    gm = Gitmem.open(repo)
    a = gm.learn("The queue retries failed jobs with exponential backoff", file="src/app.py#L2-L4",
                 agent="claude", now=BASE - timedelta(days=3)).memory.id
    b = gm.learn("Billing worker batches invoices every night", type="insight",
                 now=BASE - timedelta(days=10)).memory.id
    gm.learn("Always run the migrations before the tests", type="axiom", now=BASE - timedelta(days=40))
    d = gm.learn("Queue retries are capped at five attempts", type="core", confidence=0.8,
                 now=BASE - timedelta(days=5)).memory.id
    gm.link(d, a, "supersedes")
    gm.learn("Retry jitter is randomised per job", file="src/app.py", now=BASE)
    old = gm.learn("Deploys happen on Mondays", type="preference",
                   now=BASE - timedelta(days=100)).memory.id
    gm.learn("Deploys happen on Tuesdays", supersedes=old, now=BASE - timedelta(days=1))
    gm.learn("A long note " + "about the retry queue and its many workers " * 12, type="insight",
             now=BASE - timedelta(days=2))
    for i in range(30):
        gm.learn(f"Job {i} of the nightly batch retries {i % 4} times", confidence=0.5 + i / 100,
                 now=BASE - timedelta(days=i))
    gm.refute(b, "billing moved to the payments service")
    gm.set_persona(b"name: test agent\ninvariants:\n  - never push to main\n")
    gm.spark("Was halfway through the retry refactor")
    Gitmem.open(repo).wake(now=BASE)
    assert plan_path(repo).exists()
    return repo


def memory_id(repo: Path, text: str) -> str:
    return next(m.id for m in Gitmem.open(repo).memories()[0] if text in m.content)


# -- the plan of a state, over time --------------------------------------------------------------


def test_a_warm_wake_reads_the_plan_and_equals_a_cold_one_for_every_budget(planned):
    assert_planned_equals_cold(planned, BASE)


def test_the_plan_holds_only_the_memories_that_can_still_be_shown(planned):
    gm = Gitmem.open(planned)
    from gitmem.cache.db import CacheDB
    from gitmem.cache.wakeplan import read_plan

    db = CacheDB(cache_of(planned))
    plan = read_plan(db, gm._context.plan_key(gm.tip()))
    assert plan is not None
    ids = plan.memory_ids(db)
    assert memory_id(planned, "Billing worker") not in ids  # refuted
    assert memory_id(planned, "Job 29 ") not in ids  # below the threshold: for good
    assert memory_id(planned, "Deploys happen on Mondays") in ids  # superseded, for now
    assert len(ids) < len(gm.memories()[0])


def test_a_new_day_of_decay_reads_the_same_plan_and_equals_a_cold_wake(planned):
    old = memory_id(planned, "Deploys happen on Mondays")
    planned_base, seen_base, _ = wake(planned, BASE)
    later, seen_later, _ = wake(planned, LATER)
    assert planned_base and later  # the plan of BASE holds a month on
    assert old not in seen_base[4] and old in seen_later[4]  # its superseder fell below the threshold
    assert seen_later == cold(planned, LATER)[0]
    assert_planned_equals_cold(planned, LATER)


def test_a_plan_is_not_used_before_the_time_it_was_built_for(planned):
    shutil.rmtree(cache_of(planned))
    Gitmem.open(planned).wake(now=LATER)  # the only plan: built for LATER
    used, seen, _ = wake(planned, BASE)
    assert not used
    assert seen == cold(planned, BASE)[0]


# -- a change of state: a new plan, equal to a cold wake ------------------------------------------------


def test_learn(planned):
    Gitmem.open(planned).learn("Workers ack a job only after its commit", type="core", now=BASE)
    assert_changed_state_equals_cold(planned, BASE)


def test_forget(planned):
    Gitmem.open(planned).forget(memory_id(planned, "Retry jitter"))
    assert_changed_state_equals_cold(planned, BASE)


def test_refute(planned):
    Gitmem.open(planned).refute(memory_id(planned, "Always run the migrations"), "not any more")
    assert_changed_state_equals_cold(planned, BASE)


def test_confidence_and_link(planned):
    gm = Gitmem.open(planned)
    gm.set_confidence(memory_id(planned, "Job 3 "), 0.31)
    gm.link(memory_id(planned, "Job 2 "), memory_id(planned, "Job 1 "), "refines")
    assert_changed_state_equals_cold(planned, BASE)


def test_persona_and_spark(planned):
    gm = Gitmem.open(planned)
    gm.set_persona(b"name: another agent\ninvariants:\n  - keep commits small\n")
    gm.spark("Now on the billing worker", now=BASE + timedelta(hours=1))
    assert_changed_state_equals_cold(planned, BASE)


def test_verify_after_a_code_commit(planned):
    commit_file(planned, "src/app.py", "".join(f"changed {i}\n" for i in range(1, 21)), "rewrite")
    assert_changed_state_equals_cold(planned, BASE)  # the commit alone: new distances
    assert Gitmem.open(planned).verify(now=BASE).commit is not None
    assert_changed_state_equals_cold(planned, BASE)


def test_a_code_commit_moves_the_decay_of_anchored_memories(planned):
    for i in range(5):
        git(planned, "commit", "-q", "--allow-empty", "-m", f"empty {i}")
    assert_changed_state_equals_cold(planned, BASE)


def test_import(planned, tmp_path):
    legacy = legacy_records(tmp_path / "legacy", 3)
    assert Gitmem.open(planned).import_legacy([legacy]).commit is not None
    assert_changed_state_equals_cold(planned, BASE)


def test_an_uncommitted_edit_of_an_anchored_file_and_its_revert(planned):
    anchored = memory_id(planned, "exponential backoff")
    (planned / "src" / "app.py").write_text(APP_EDITED)
    Gitmem.open(planned).verify(now=BASE)  # records the overlay (nothing is committed)
    assert anchored in Gitmem.open(planned).local_reasons()
    assert_changed_state_equals_cold(planned, BASE)
    assert anchored not in wake(planned, BASE)[1][4]
    git(planned, "checkout", "--", "src/app.py")  # the overlay no longer holds
    assert_changed_state_equals_cold(planned, BASE)
    assert anchored not in Gitmem.open(planned).local_reasons()


def test_a_settings_change(planned):
    config = planned / ".tur" / "config.yaml"
    config.parent.mkdir()
    config.write_text("decay:\n  threshold: 0.6\n")
    assert_changed_state_equals_cold(planned, BASE)
    config.write_text("decay:\n  threshold: 0.6\n  half_life_days:\n    fact: 60\n")
    assert_changed_state_equals_cold(planned, BASE)
    config.write_text("trust:\n  authors: [bob@example.com]\n")
    assert_changed_state_equals_cold(planned, BASE)


def test_sync_with_a_teammate_and_trust_and_identity(origin):
    a, b = clone(origin, "a"), clone(origin, "b", who="Bob")
    ga, gb = Gitmem.open(a), Gitmem.open(b)
    ga.learn("Local builds use make", now=BASE)
    ga.sync()
    ga.wake(now=BASE)
    gb.sync()
    gb.learn("Never deploy on Fridays", type="axiom", now=BASE)
    gb.learn("The cache layer flushes every minute", type="insight", now=BASE)
    gb.sync()
    Gitmem.open(a).sync()
    assert_changed_state_equals_cold(a, BASE)
    text = wake(a, BASE)[1][0]
    assert "HYPOTHESIS" in text and "By: Bob (bob@example.com)" in text
    (a / ".tur").mkdir()
    (a / ".tur" / "config.yaml").write_text("trust:\n  authors: [bob@example.com]\n")
    assert_changed_state_equals_cold(a, BASE)
    assert "HYPOTHESIS" not in wake(a, BASE)[1][0]
    (a / ".tur" / "config.yaml").unlink()
    git(a, "config", "user.email", "bob@example.com")
    git(a, "config", "user.name", "Bob")
    assert_changed_state_equals_cold(a, BASE)
    assert "By: Bob" not in wake(a, BASE)[1][0]


def test_a_memory_observed_at_a_commit_not_fetched_here_gets_no_plan_until_it_is(origin):
    a, b = clone(origin, "a"), clone(origin, "b", who="Bob")
    commit_file(b, "src/app.py", "".join(f"line {i}\n" for i in range(1, 25)), "more lines")
    gb = Gitmem.open(b)
    gb.learn("The app has 24 lines now", file="src/app.py#L21-L24", now=BASE)
    gb.sync()
    Gitmem.open(a).sync()
    for _ in range(2):  # its distance is unknown here: no plan is saved
        used, seen, _ = wake(a, BASE)
        assert not used and not plan_path(a).exists()
    assert seen == cold(a, BASE)[0]
    git(b, "push", "-q", "origin", "main")
    git(a, "fetch", "-q", "origin")  # the commit is known now: same HEAD, same memories
    assert not plan_path(a).exists()
    assert_planned_equals_cold(a, BASE)


# -- plans that must not be used --------------------------------------------------------------------------


def test_a_plan_of_another_state_under_this_states_name_is_not_used(planned):
    before = plan_path(planned)
    stolen = before.read_bytes()
    Gitmem.open(planned).learn("Workers ack a job only after its commit", now=BASE)
    after = plan_path(planned)
    assert after != before
    after.write_bytes(stolen)  # a well-formed plan; the key inside is not
    used, seen, _ = wake(planned, BASE)
    assert not used
    assert seen == cold(planned, BASE)[0]


def test_a_damaged_plan_is_deleted_reported_and_rebuilt(planned):
    path = plan_path(planned)
    path.write_bytes(path.read_bytes()[:-10])  # cut short
    code, out, err = tur(planned, "wake")
    assert code == 0
    assert f"gitmem cache entry wake {path.key[:40]} is damaged (unreadable payload" in err
    assert out == cold_cli(planned, "wake")
    code, again, err = tur(planned, "wake")
    assert again == out and err == ""


def test_the_warnings_of_entries_skipped_are_printed_from_the_plan_too(planned):
    store = Gitmem.open(planned).store
    store.transact(lambda tip: Mutation({"memories/ab/fact-abababab.yaml": b"id: [unclosed\n"},
                                        "a malformed record"))
    out, err = cold_run(planned, "wake")
    assert "skipped malformed record blob" in err
    tur(planned, "wake")
    assert tur(planned, "wake")[1:] == (out, err)
    assert from_plan_cli(planned)


def from_plan_cli(repo: Path) -> bool:
    """Whether a wake now reads the plan (a new facade, as the next ``tur wake`` has)."""
    return wake(repo, datetime.now(UTC))[0]


def test_a_badly_shaped_plan_is_not_trusted(planned):
    path = plan_path(planned)
    gm = Gitmem.open(planned)
    key = gm._context.plan_key(gm.tip())
    payload = path.read_payload()
    payload["streams"] = [(code, tier, "days", n) for code, tier, _, n in payload["streams"]]
    path.write_payload(payload)
    assert payload["key"] == key
    code, out, err = tur(planned, "wake")
    assert code == 0 and "is damaged (bad structure: plan fields)" in err
    assert out == cold_cli(planned, "wake")


def test_plan_rows_of_the_wrong_type_are_not_trusted(planned):
    import sqlite3

    with sqlite3.connect(cache_of(planned) / "cache.sqlite") as conn:
        conn.execute("UPDATE wake_row SET tokens = 'many'")  # well-formed rows, a column of the wrong type
    code, out, err = tur(planned, "wake")
    assert code == 0 and "is damaged (bad structure: wake plan rows)" in err
    assert out == cold_cli(planned, "wake")


# -- through the command line -------------------------------------------------------------------------------


def cold_cli(repo: Path, *args: str, stdin: str = "") -> str:
    return cold_run(repo, *args, stdin=stdin)[0]


def cold_run(repo: Path, *args: str, stdin: str = "") -> tuple[str, str]:
    """``tur ARGS`` with the read cache deleted first: (stdout, stderr)."""
    shutil.rmtree(cache_of(repo), ignore_errors=True)
    code, out, err = tur(repo, *args, stdin=stdin)
    assert code == 0
    return out, err


def without_salience(doc: dict) -> dict:
    # Salience is rounded to 6 digits: two runs seconds apart may round a decaying one apart.
    for entry in doc["assembly"]:
        entry.pop("salience")
    return doc


@pytest.mark.parametrize("args", [
    (), ("--format", "json"), ("--explain",), ("--unbounded",), ("--token-budget", "60"),
    ("--max-chars", "500"), ("--token-budget", "200", "--max-chars", "800"),
])
def test_tur_wake_from_the_plan_prints_what_a_cold_wake_prints(planned, args):
    cold_out = cold_cli(planned, "wake", *args)
    tur(planned, "wake")  # saves the plan of today
    code, out, err = tur(planned, "wake", *args)
    assert code == 0 and err == ""
    if "--format" in args:
        assert without_salience(json.loads(out)) == without_salience(json.loads(cold_out))
    else:
        assert out == cold_out


def test_a_session_start_hook_from_the_plan_prints_what_a_cold_one_prints(planned):
    payload = json.dumps({"session_id": "s1", "source": "startup", "hook_event_name": "SessionStart"})
    cold_out = cold_cli(planned, "hook", "session-start", stdin=payload)
    tur(planned, "wake")
    fresh = json.dumps({"session_id": "s2", "source": "startup", "hook_event_name": "SessionStart"})
    code, out, _ = tur(planned, "hook", "session-start", stdin=fresh)
    assert code == 0 and out == cold_out and "never push to main" in out


def test_the_plan_checks_half_lives_against_the_decay_modules_marker():
    from gitmem.cache import wakeplan
    from gitmem.record.decay import FROM_POLICY

    assert wakeplan._FROM_POLICY == FROM_POLICY


# -- the lazy merge of a plan's streams against the full sort ---------------------------------------------


def synthetic_columns(n: int, seed: int) -> dict:
    """Columns of ``n`` memories over every decay class, with many exact ties and a few relations."""
    import random

    from gitmem.record.decay import FROM_POLICY, microseconds

    rng = random.Random(seed)
    base = microseconds(BASE)
    moments = [base - d * 86_400_000_000 for d in (0, 1, 3, 10)]  # shared: rows that tie exactly
    kinds = ["fact", "insight", "preference", "axiom", "core"]
    ids = sorted(f"{rng.choice(kinds)}-{i:08x}" for i in rng.sample(range(1 << 30), n))
    cols: dict = {name: [] for name in ("types", "statuses", "conf", "half", "verified", "distances",
                                        "rels", "trusted", "tokens", "texts", "chars")}
    short: dict = {}
    for r, memory_id in enumerate(ids):
        kind = memory_id.split("-")[0]
        cols["types"].append(kind)
        cols["statuses"].append(rng.choice(["fresh"] * 6 + ["unanchored", "stale", "refuted"]))
        cols["conf"].append(rng.choice([1.0, 0.9, 0.75, 0.5, 1]))
        cols["half"].append(rng.choice([FROM_POLICY] * 6 + [None, 30.0, 7.5]))
        cols["verified"].append(rng.choice(moments) if rng.random() < 0.6 else
                                rng.choice([None, base + 3_600_000_000,  # verified after the build
                                            base - rng.randrange(40 * 86_400_000_000)]))
        cols["distances"].append(rng.choice([None, 0, 1, 3]))
        links = []
        if rng.random() < 0.04:
            links.append((rng.choice(["supports", "supersedes", "refines"]), rng.choice(ids)))
        cols["rels"].append(links)
        cols["trusted"].append(rng.random() < 0.8)
        size = rng.choice([8, 12, 20, 20, 35, 60, 140])
        text = f"- [{memory_id}] " + "word " * size + "\n"
        cols["texts"].append(text)
        cols["tokens"].append(counter(text))
        cols["chars"].append(5 * size)
        if size >= 60:
            short[r] = f"- [{memory_id}] preview… (`tur show {memory_id}`)\n"
    cols["ids"] = ids
    cols["short"] = short
    return cols


def counter(text: str) -> int:
    return len(text.split()) + text.count("\n")


def full_rows(cols: dict, now: datetime):
    from gitmem.context.wake import WakeRows
    from gitmem.record.decay import DecayPolicy, weight_column
    from gitmem.record.relations import linked_degrees

    weights = weight_column(cols["types"], cols["statuses"], cols["conf"], cols["half"], cols["verified"],
                            cols["distances"], now, DecayPolicy())
    short = cols["short"]
    return WakeRows(ids=cols["ids"], types=cols["types"], statuses=cols["statuses"], weights=weights,
                    relations=cols["rels"], tokens=cols["tokens"], entry=cols["texts"].__getitem__,
                    compressed=lambda r: short.get(r, cols["texts"][r]),
                    min_chars=cols["chars"].__getitem__, trusted=cols["trusted"],
                    degrees=linked_degrees(cols["ids"], cols["rels"]))


def saved_plan(tmp_path: Path, cols: dict):
    """Save the plan of ``cols`` as a wake at BASE does; return the database and the loaded plan."""
    from gitmem.cache.db import CacheDB
    from gitmem.cache.wakeplan import read_plan, save_plan
    from gitmem.context.wake import showable_rows
    from gitmem.record.decay import DecayPolicy, microseconds

    rows = full_rows(cols, BASE)
    keep = showable_rows(rows, DecayPolicy().threshold)

    def pick(column):
        return [column[r] for r in keep]

    short = {i: cols["short"][r] for i, r in enumerate(keep) if r in cols["short"]}
    payload = {name: pick(cols[name]) for name in ("ids", "types", "statuses", "conf", "half", "verified",
                                                   "distances", "rels", "trusted", "tokens", "texts",
                                                   "chars")}
    payload.update(built=microseconds(BASE), blobs=pick(cols["ids"]), authors=[None] * len(keep),
                   weights=pick(rows.weights), short=short,
                   short_tokens={i: counter(text) for i, text in short.items()},
                   degrees={i: rows.degrees[r] for i, r in enumerate(keep) if r in rows.degrees},
                   stale=cols["statuses"].count("stale"), persona=None, continuity=None, skipped=[])
    db = CacheDB(tmp_path / "cache")
    key = ("synthetic",)
    save_plan(db, key, payload, DecayPolicy())
    plan = read_plan(db, key)
    assert plan is not None
    return db, plan


@pytest.mark.parametrize("seed", [1, 2])
def test_the_lazy_merge_of_a_plan_gives_the_full_sort_for_every_class_tie_and_budget(tmp_path, seed):
    from gitmem.context.wake import compile_ranked, compile_rows
    from gitmem.record.decay import DecayPolicy

    cols = synthetic_columns(1500, seed)
    db, plan = saved_plan(tmp_path, cols)
    assert len({h for _, _, h, _ in plan.streams}) >= 4  # several decay classes (and the static one)
    stale = cols["statuses"].count("stale")
    entries = dict(zip(cols["ids"], cols["texts"], strict=True))
    for days in (0, 0.5, 2, 9, 40, 400):
        now = BASE + timedelta(days=days)
        rows = full_rows(cols, now)
        for budget, chars in ((None, None), (40, None), (200, None), (900, None), (5000, None),
                              (None, 700), (600, 2500), (90, 300)):
            full = compile_rows(rows, budget=budget, max_chars=chars, counter=counter)
            lazy = compile_ranked(plan.tiers(db, now, DecayPolicy()), budget=budget, max_chars=chars,
                                  counter=counter, stale=stale, no_short=entries.__getitem__)
            assert (lazy.text, lazy.tokens, lazy.omitted, lazy.shown) == (
                full.text, full.tokens, full.omitted, full.shown), (days, budget, chars)


def test_a_wake_of_a_plan_reads_rows_in_proportion_to_its_budget(tmp_path):
    from gitmem.context.wake import compile_ranked
    from gitmem.record.decay import DecayPolicy

    cols = synthetic_columns(6000, 3)
    db, plan = saved_plan(tmp_path, cols)
    tiers = plan.tiers(db, BASE, DecayPolicy())
    result = compile_ranked(tiers, budget=300, counter=counter, stale=0)
    assert result.shown
    read = sum(s.next for tier in tiers for s in tier.streams)
    assert read < 600  # of the ~3,500 showable rows
