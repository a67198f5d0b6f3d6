"""Recall-quality benchmark: gitmem's ranker beside plain BM25 on labelled development sets.

0. Code memories of a fictional web service: fixtures/recall/memories.yaml and queries.yaml
   (1-3 relevant ids each): recall@5 and MRR (any rank).
1. The development sets in ``../shared/eval/`` beside the repository (each README there gives
   its fields, metrics and licence; read from there, never copied here), imported through
   gitmem's own fields only:

   - ``locomo-dev``: three long conversations, a memory per turn (``content`` = the turn,
     ``author`` = the speaker, ``observed_at`` = the session's date plus the turn's index in
     seconds); hit@5 and MRR@10 per question category.
   - ``coderecall-dev``: the docstrings of click and attrs (``content`` = ``qualname:
     docstring``, ``context_ref`` = ``path#Lx-Ly``), queried by later commit subjects; hit@5
     and MRR@10, without and with the changed file as ``--file`` (the reference then ranks
     the file's memories first); and ``foreign_queries.json`` (the other project's subjects:
     nothing is relevant).
   - ``longmemeval-dev``: half of LongMemEval_S, a memory per user turn; recall_all@5 and
     ndcg_any@5 per question type.

   Plain BM25 is each README's reference (Okapi, k1 1.2, b 0.75, lowercase ``[a-z0-9]+``
   tokens, NLTK's English stop words, no stemming; on LoCoMo over the README's text,
   ``speaker: turn``). ``--before DIR`` adds the ranker of another checkout (e.g. ec2a922),
   run in a subprocess on the same memories. Each set is also shown on a part held out from
   tuning (one LoCoMo conversation, the attrs repository, half of the LongMemEval questions:
   :func:`held_out`) beside the rest.
2. The relevance floor: with :data:`~gitmem.context.recall.RELEVANCE_FLOOR`, as ``tur hook
   pre-turn`` recalls, the share of foreign prompts given no memory, the mean number given,
   and on the real queries the share where a relevant memory is among those given, beside
   plain BM25's top 5.
3. Warm recall in process at 10,000 memories (LongMemEval turns): p50 and p90 of ``recall``
   with the index built (what the cache keeps), and the time to build it.

Run from the repository root:  python bench/bench_recall.py [--eval DIR] [--before DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EVAL = ROOT.parent / "shared" / "eval"
LOCOMO = EVAL / "locomo-dev"
K = 5
LOCOMO_CATEGORIES = ("single-hop", "multi-hop", "temporal", "open-domain")
CODE_REPOS = ("click", "attrs")

# Plain dicts until a ranker makes records of them: ``--before`` runs another checkout's
# gitmem on the same memories, so the loaders import nothing of gitmem.
Mem = dict[str, Any]
Query = dict[str, Any]


# -- the sets -----------------------------------------------------------------------------------

def _at(day: str, seconds: int) -> str:
    return (datetime.fromisoformat(day) + timedelta(seconds=seconds)).isoformat()


def load_locomo(root: Path) -> tuple[dict[str, list[Mem]], list[Query]]:
    """LoCoMo: store -> memories (a turn each), and the questions."""
    stores: dict[str, list[Mem]] = defaultdict(list)
    for r in json.loads((root / "locomo-dev" / "memories.json").read_text()):
        speaker, text = r["speaker"], r["text"]
        turn = text[len(speaker) + 2:] if text.startswith(f"{speaker}: ") else text
        stores[r["conversation_id"]].append(
            {"id": r["id"], "content": turn, "author": f"{speaker} <{speaker.lower()}@locomo.invalid>",
             "plain": text, "observed": _at(r["observed_at"], r["turn"]), "ref": None})
    queries = [{"store": q["conversation_id"], "q": q["question"], "gold": q["evidence"],
                "cat": q["category_name"]}
               for q in json.loads((root / "locomo-dev" / "queries.json").read_text())]
    return stores, queries


def load_code(root: Path) -> tuple[dict[str, list[Mem]], list[Query], list[Query]]:
    """Code memories: repository -> memories, the commit subjects, the foreign subjects."""
    stores: dict[str, list[Mem]] = {}
    queries, foreign = [], []
    for repo in CODE_REPOS:
        folder = root / "coderecall-dev" / repo
        stores[repo] = [
            {"id": r["id"], "content": r["text"], "author": None, "plain": r["text"],
             "observed": r["observed_at"],
             "ref": r["path"] if r["start_line"] is None
             else f"{r['path']}#L{r['start_line']}-L{r['end_line']}"}
            for r in json.loads((folder / "memories.json").read_text())]
        queries += [{"store": repo, "q": q["question"], "gold": q["evidence"], "cat": repo,
                     "file": q["files"][0] if q["files"] else None}
                    for q in json.loads((folder / "queries.json").read_text())]
        foreign += [{"store": repo, "q": q["question"], "gold": [], "cat": repo}
                    for q in json.loads((folder / "foreign_queries.json").read_text())]
    return stores, queries, foreign


def load_lme(root: Path) -> tuple[dict[str, list[Mem]], list[Query]]:
    """LongMemEval_S (this half): haystack -> user turns, and the scored questions."""
    stores: dict[str, list[Mem]] = defaultdict(list)
    for r in json.loads((root / "longmemeval-dev" / "memories.json").read_text()):
        if not r["text"].strip():
            continue  # three empty turns, none of them evidence: a store keeps no empty memory
        stores[r["conversation_id"]].append(
            {"id": r["id"], "content": r["text"], "author": "user <user@longmemeval.invalid>",
             "plain": r["text"], "observed": _at(r["observed_at"], r["turn"]), "ref": None})
    queries = [{"store": q["conversation_id"], "q": q["question"], "gold": q["evidence"],
                "cat": q["category_name"], "position": q["position"]}
               for q in json.loads((root / "longmemeval-dev" / "queries.json").read_text())
               if not q["abstention"] and q["evidence"]]
    return stores, queries


def load_all(root: Path) -> dict[str, Any]:
    code, code_queries, foreign = load_code(root)
    return {"locomo": load_locomo(root), "code": (code, code_queries), "foreign": (code, foreign),
            "lme": load_lme(root)}


# -- rankers ------------------------------------------------------------------------------------

_PLAIN = re.compile(r"[a-z0-9]+")


class PlainBM25:
    """The READMEs' reference: Okapi BM25, k1 1.2, b 0.75, ``[a-z0-9]+`` tokens, NLTK stop words."""

    def __init__(self, texts: list[str], stop: frozenset[str], k1: float = 1.2, b: float = 0.75) -> None:
        self.stop = stop
        docs = [Counter(self.terms(t)) for t in texts]
        self.lengths = [sum(d.values()) for d in docs]
        self.avg = (sum(self.lengths) / len(docs)) or 1.0
        self.postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for i, d in enumerate(docs):
            for t, c in d.items():
                self.postings[t].append((i, c))
        self.k1, self.b = k1, b

    def terms(self, text: str) -> list[str]:
        return [t for t in _PLAIN.findall(text.lower()) if t not in self.stop]

    def ranking(self, query: str) -> list[int]:
        n = len(self.lengths)
        out: dict[int, float] = defaultdict(float)
        for term in set(self.terms(query)):
            found = self.postings.get(term, [])
            if not found:
                continue
            idf = math.log(1 + (n - len(found) + 0.5) / (len(found) + 0.5))
            for i, tf in found:
                norm = self.k1 * (1 - self.b + self.b * self.lengths[i] / self.avg)
                out[i] += idf * tf * (self.k1 + 1) / (tf + norm)
        return [i for i, _ in sorted(out.items(), key=lambda x: (-x[1], x[0]))]


def file_first(ranking: list[str], store: list[Mem], path: str | None) -> list[str]:
    """The reference with ``--file``: the file's memories first (ranked, then the rest), then the others."""
    same = [m["id"] for m in store if m["ref"] and m["ref"].split("#", 1)[0] == path]
    inside = set(same)
    ranked = [i for i in ranking if i in inside]
    seen = set(ranked)
    return ranked + [i for i in same if i not in seen] + [i for i in ranking if i not in inside]


def plain_rankings(sets: dict[str, Any]) -> dict[str, list[list[str]]]:
    """Plain BM25's ranking of every query of every set (and with the file first, for code)."""
    from gitmem.context.analysis import STOPWORDS

    out: dict[str, list[list[str]]] = {}
    for name, (stores, queries) in sets.items():
        built = {s: PlainBM25([m["plain"] for m in ms], STOPWORDS) for s, ms in stores.items()}
        out[name] = [[stores[q["store"]][i]["id"] for i in built[q["store"]].ranking(q["q"])]
                     for q in queries]
        if name == "code":
            out["code --file"] = [file_first(r, stores[q["store"]], q["file"])
                                  for r, q in zip(out[name], queries, strict=True)]
    return out


def gitmem_rankings(sets: dict[str, Any], floor: float | None = None) -> dict[str, list[list[str]]]:
    """gitmem's ranking of every query (``recall``, top 10; top 5 over ``floor`` when given).

    Runs on whichever gitmem is importable (``--before`` runs it in another checkout), through
    ``recall`` and the record model only: each store is indexed once when this gitmem can be
    given an index, else at each query.
    """
    try:
        from gitmem.context import recall as recall_module
    except ImportError:  # a checkout from before gitmem/context (ec2a922)
        from gitmem import recall as recall_module  # type: ignore[no-redef]

    memory_model = _memory_model()
    out: dict[str, list[list[str]]] = {}
    for name, (stores, queries) in sets.items():
        records = {s: [_record(memory_model, n, m) for n, m in enumerate(ms)] for s, ms in stores.items()}
        back = {s: {r.id: m["id"] for r, m in zip(records[s], ms, strict=True)} for s, ms in stores.items()}
        provide = {s: _provider(recall_module, rs) for s, rs in records.items()}
        rows: list[list[str]] = []
        rows_file: list[list[str]] = []
        for q in queries:
            store = records[q["store"]]
            kwargs: dict[str, Any] = {"top_k": 10 if floor is None else K}
            if floor is not None:
                kwargs["floor"] = floor
            if provide[q["store"]] is not None:
                kwargs["index"] = provide[q["store"]]
            hits = recall_module.recall(store, q["q"], **kwargs).hits
            rows.append([back[q["store"]][h.memory.id] for h in hits])
            if name == "code" and floor is None:
                path = q["file"]
                first = [r for r in store if r.provenance.context_ref
                         and r.provenance.context_ref.split("#", 1)[0] == path]
                hits = recall_module.recall(store, q["q"], first=first, **kwargs).hits
                rows_file.append([back[q["store"]][h.memory.id] for h in hits])
        out[name] = rows
        if rows_file:
            out["code --file"] = rows_file
    return out


def _memory_model() -> Any:
    try:
        from gitmem.record.models import Memory
    except ImportError:  # a checkout from before gitmem/record (ec2a922)
        from gitmem.models import Memory  # type: ignore[no-redef]
    return Memory


def _record(model: Any, n: int, m: Mem) -> Any:
    return model(id=f"fact-{n:08x}", type="fact", content=m["content"], confidence=1.0,
                 author=m["author"],
                 provenance={"observed_at": m["observed"], "context_ref": m["ref"]},
                 decay={"last_verified_at": m["observed"], "half_life_days": None})


def _provider(module: Any, records: list[Any]) -> Callable[[Any], Any] | None:
    """``candidates -> index`` of these records, built once, when this gitmem's recall takes one."""
    build = getattr(module, "RecallIndex", None)
    columns = getattr(module, "index_columns", None)
    if build is None or columns is None:
        return None  # an older gitmem: recall indexes at each query
    index = build.build([r.content for r in records], ids=[r.id for r in records], **columns(records))
    return lambda candidates: index


# -- metrics ------------------------------------------------------------------------------------

def metrics(ranking: list[str], gold: Iterable[str]) -> dict[str, float]:
    """hit@5, recall@5, MRR@10, recall_all@5 and ndcg_any@5 (binary gains) of one ranking."""
    wanted = set(gold)
    top = set(ranking[:K]) & wanted
    first = next((i for i, m in enumerate(ranking[:10], start=1) if m in wanted), None)
    dcg = sum(1 / math.log2(i + 1) for i, m in enumerate(ranking[:K], start=1) if m in wanted)
    ideal = sum(1 / math.log2(i + 1) for i in range(1, min(K, len(wanted)) + 1))
    return {"hit@5": float(bool(top)), "recall@5": len(top) / len(wanted),
            "mrr@10": 1 / first if first else 0.0, "recall_all@5": float(top == wanted),
            "ndcg_any@5": dcg / ideal}


def table(queries: list[Query], rankings: list[list[str]]) -> dict[str, dict[str, float]]:
    """Category (and ``all``) -> mean of each metric, and ``n``."""
    sums: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for q, ranking in zip(queries, rankings, strict=True):
        for category in (q["cat"], "all"):
            acc = sums[category]
            acc["n"] += 1
            for key, value in metrics(ranking, q["gold"]).items():
                acc[key] += value
    return {c: {k: (v / a["n"] if k != "n" else v) for k, v in a.items()} for c, a in sums.items()}


HELD_OUT_CONVERSATION = "conv-41"
HELD_OUT_REPOSITORY = "attrs"


def held_out(name: str, query: Query) -> bool:
    """Whether ``query`` is in the held-out part of its development set (the rest is tuned on).

    LoCoMo: the conversation :data:`HELD_OUT_CONVERSATION`; code: the repository
    :data:`HELD_OUT_REPOSITORY`; LongMemEval: every other question of the split (position
    2 mod 4: the split holds the even positions).
    """
    if name == "locomo":
        return bool(query["store"] == HELD_OUT_CONVERSATION)
    if name.startswith("code"):
        return bool(query["store"] == HELD_OUT_REPOSITORY)
    return bool(query["position"] % 4 == 2)


def print_halves(sets: dict[str, Any], rankers: Callable[[str], dict[str, list[list[str]]]]) -> None:
    """Each set's figures on its tuning part and its held-out part (:func:`held_out`)."""
    print("Held out within the development sets (tuned on the rest): tuning part | held-out part")
    for key, title, keys in (("locomo", "LoCoMo hit@5 / MRR@10", ("hit@5", "mrr@10")),
                             ("code", "code hit@5 / MRR@10", ("hit@5", "mrr@10")),
                             ("code --file", "code --file hit@5 / MRR@10", ("hit@5", "mrr@10")),
                             ("lme", "LongMemEval recall_all@5 / ndcg_any@5",
                              ("recall_all@5", "ndcg_any@5"))):
        queries = sets[key.split()[0]][1]
        cells = []
        for name, ranking in rankers(key).items():
            parts = []
            for held in (False, True):
                chosen = [(q, r) for q, r in zip(queries, ranking, strict=True) if held_out(key, q) == held]
                row = table([q for q, _ in chosen], [r for _, r in chosen])["all"]
                parts.append(f"{row[keys[0]]:.3f} / {row[keys[1]]:.3f} (n {int(row['n'])})")
            cells.append(f"{name}: {' | '.join(parts)}")
        print(f"  {title:<40} " + ";  ".join(cells))
    print()


def floor_figures(queries: list[Query], given: list[list[str]]) -> tuple[float, float, float]:
    """(share given nothing, mean given, share where a relevant one is among those given)."""
    n = len(queries)
    return (sum(not g for g in given) / n, sum(len(g) for g in given) / n,
            sum(bool(set(g) & set(q["gold"])) for q, g in zip(queries, given, strict=True)) / n)


# -- report -------------------------------------------------------------------------------------

def print_table(title: str, queries: list[Query], rankers: dict[str, list[list[str]]],
                keys: tuple[str, str], categories: Iterable[str] | None = None) -> dict[str, Any]:
    figures = {name: table(queries, r) for name, r in rankers.items()}
    names = list(figures)
    print(title)
    cats = [*(categories or sorted(c for c in figures[names[0]] if c != "all")), "all"]
    print(f"{'':<26}{'n':>5}" + "".join(f" | {name:^17}" for name in names))
    print(f"{'':<26}{'':>5}" + f" | {keys[0][:8]:>8} {keys[1][:8]:>8}" * len(names))
    for c in cats:
        row = figures[names[0]].get(c)
        if row is None:
            continue
        cells = "".join(f" | {figures[name][c][keys[0]]:>8.3f} {figures[name][c][keys[1]]:>8.3f}"
                        for name in names)
        print(f"{c:<26}{int(row['n']):>5}{cells}")
    base = figures[names[0]]["all"]
    for name in names[1:]:
        mine = figures[name]["all"]
        ratios = [mine[k] / base[k] if base[k] else float("nan") for k in keys]
        print(f"{'':<26}{'':>5}   {name} / {names[0]}: "
              f"{ratios[0]:.2f}x {keys[0]}, {ratios[1]:.2f}x {keys[1]}")
    print()
    return figures


def speed(root: Path, count: int = 10_000) -> tuple[float, float, float, float, float, int]:
    """Warm recall over ``count`` LongMemEval turns, with the index built (what the cache keeps).

    Returns:
        (seconds to build the index, p50 and p90 in ms of the first recall of each question,
        p50 in ms of asking them all again (a long-running process), p50 of the first
        recalls in ms of this process's CPU time (what a loaded machine does not inflate),
        questions).
    """
    from gitmem.context.recall import RELEVANCE_FLOOR, RecallIndex, index_columns, recall

    stores, queries = load_lme(root)
    model = _memory_model()
    memories: list[Any] = []
    asked: list[str] = []
    for q in queries:
        if len(memories) >= count:
            break
        memories += [_record(model, len(memories) + n, m) for n, m in enumerate(stores[q["store"]])]
        asked.append(q["q"])
    memories = memories[:count]
    started = time.perf_counter()
    index = RecallIndex.build([m.content for m in memories], ids=[m.id for m in memories],
                              **index_columns(memories))
    built = time.perf_counter() - started
    rounds: list[list[float]] = [[], []]
    cpu: list[float] = []
    for times in rounds:
        for question in asked:
            started, used = time.perf_counter(), time.process_time()
            # The candidates as a warm process has them (the cache's columns give the selection).
            recall((), question, top_k=K, index=lambda candidates: index, floor=RELEVANCE_FLOOR,
                   selected=(memories, {}))
            times.append((time.perf_counter() - started) * 1000)
            if times is rounds[0]:
                cpu.append((time.process_time() - used) * 1000)
    first = sorted(rounds[0])
    p90 = first[int(0.9 * len(first))]
    return (built, statistics.median(first), p90, statistics.median(rounds[1]), statistics.median(cpu),
            len(first))


def fixture_figures() -> dict[str, tuple[float, float]]:
    """The fictional code set: ranker -> (recall@5, MRR)."""
    import yaml

    from gitmem.context.analysis import STOPWORDS
    from gitmem.context.recall import rank_memories
    from gitmem.record.models import Memory

    raw = yaml.safe_load((ROOT / "fixtures" / "recall" / "memories.yaml").read_text())
    memories = [Memory(id=r["id"], type=r["type"], content=r["content"], confidence=r["confidence"],
                       provenance={"observed_at": r["observed_at"]},
                       decay={"last_verified_at": r["observed_at"], "half_life_days": 90})
                for r in raw]
    queries = yaml.safe_load((ROOT / "fixtures" / "recall" / "queries.yaml").read_text())
    plain = PlainBM25([m.content for m in memories], STOPWORDS)
    out: dict[str, list[float]] = {"plain BM25": [0.0, 0.0], "gitmem": [0.0, 0.0]}
    for q in queries:
        rankings = {"plain BM25": [memories[i].id for i in plain.ranking(q["query"])],
                    "gitmem": [h.memory.id for h in rank_memories(q["query"], memories)]}
        for name, ranking in rankings.items():
            relevant = set(q["relevant"])
            first = next((i for i, m in enumerate(ranking, start=1) if m in relevant), None)
            out[name][0] += len(relevant & set(ranking[:K])) / len(relevant)
            out[name][1] += 1 / first if first else 0.0
    return {name: (a / len(queries), b / len(queries)) for name, (a, b) in out.items()}


def before_rankings(before: Path, root: Path) -> dict[str, list[list[str]]]:
    """:func:`gitmem_rankings` (and its top 5, no floor) of the gitmem in ``before``, in a subprocess."""
    env = dict(os.environ, PYTHONPATH=str(before))
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--eval", str(root),
                           "--rankings"], env=env, capture_output=True, text=True, check=True, cwd=before)
    return json.loads(proc.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eval", type=Path, default=EVAL,
                        help="directory of the development sets (default: %(default)s)")
    parser.add_argument("--locomo", type=Path, default=None,
                        help="the LoCoMo split alone (its parent is taken as --eval)")
    parser.add_argument("--before", type=Path, default=None,
                        help="a checkout whose ranker is shown as 'before' (e.g. /tmp/before-ec2)")
    parser.add_argument("--rankings", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    root = args.locomo.parent if args.locomo is not None else args.eval
    if args.rankings:  # the --before subprocess: this checkout's gitmem, as JSON
        sets = load_all(root)
        ranked = gitmem_rankings({k: sets[k] for k in ("locomo", "code", "lme", "foreign")})
        print(json.dumps(ranked))
        return
    sys.path.insert(0, str(ROOT))
    from gitmem.context.recall import (
        BM25_B,
        BM25_K1,
        FIELD_WEIGHT,
        NEIGHBOUR_WEIGHT,
        RELEVANCE_FLOOR,
        REPLY_WEIGHT,
    )
    from gitmem.context.sittings import OPENER_WEIGHT, SITTING_WEIGHT

    print(f"gitmem: BM25 k1={BM25_K1} b={BM25_B}, conversation neighbours x{REPLY_WEIGHT} (a reply), "
          f"x{NEIGHBOUR_WEIGHT} (same author), field boost "
          f"x{FIELD_WEIGHT}, sitting prior x{SITTING_WEIGHT}, opener x{OPENER_WEIGHT}, "
          f"relevance floor {RELEVANCE_FLOOR} (pre-turn)")
    print()
    print(f"{'Fictional code set (fixtures/recall)':<40} {'recall@5':>9} {'MRR':>7}")
    for name, (r, mrr) in fixture_figures().items():
        print(f"{name:<40} {r:>9.3f} {mrr:>7.3f}")
    print()
    if not (root / "locomo-dev" / "memories.json").is_file():
        print(f"development sets: skipped, {root / 'locomo-dev'} is absent")
        return
    sets = load_all(root)
    scored = {k: sets[k] for k in ("locomo", "code", "lme")}
    plain = plain_rankings(scored)
    mine = gitmem_rankings(scored)
    before = before_rankings(args.before, root) if args.before else None
    label = f"before ({args.before.name})" if args.before else None

    def rankers(key: str) -> dict[str, list[list[str]]]:
        out = {"plain BM25": plain[key]}
        if before is not None and label is not None:
            out[label] = before[key]
        out["gitmem"] = mine[key]
        return out

    print_table(f"LoCoMo ({root / 'locomo-dev'}): hit@5, MRR@10", sets["locomo"][1], rankers("locomo"),
                ("hit@5", "mrr@10"), LOCOMO_CATEGORIES)
    print_table("Code memories (coderecall-dev), commit subjects: hit@5, MRR@10", sets["code"][1],
                rankers("code"), ("hit@5", "mrr@10"))
    print_table("Code memories, with the changed file as --file (reference: BM25, the file's memories "
                "first): hit@5, MRR@10", sets["code"][1], rankers("code --file"), ("hit@5", "mrr@10"))
    print_table("LongMemEval_S turn level (longmemeval-dev): recall_all@5, ndcg_any@5", sets["lme"][1],
                rankers("lme"), ("recall_all@5", "ndcg_any@5"))

    print_halves(sets, rankers)

    print(f"Relevance floor, as `tur hook pre-turn` recalls (top {K}, floor {RELEVANCE_FLOOR}): "
          "share given nothing / mean given / share with a relevant one given")
    given = gitmem_rankings({k: sets[k] for k in ("locomo", "code", "lme", "foreign")}, RELEVANCE_FLOOR)
    plain_foreign = plain_rankings({"foreign": sets["foreign"]})["foreign"]
    rows = [("foreign prompts (coderecall-dev)", "foreign", plain_foreign),
            ("code subjects", "code", plain["code"]), ("LoCoMo questions", "locomo", plain["locomo"]),
            ("LongMemEval questions", "lme", plain["lme"])]
    print(f"{'':<34} | {'plain BM25 top 5':^24} |" + (f" {label:^24} |" if label else "")
          + f" {'gitmem pre-turn':^24}")
    for title, key, reference in rows:
        queries = sets[key][1]
        cells = [floor_figures(queries, [r[:K] for r in reference])]
        if before is not None:
            cells.append(floor_figures(queries, [r[:K] for r in before[key]]))
        cells.append(floor_figures(queries, given[key]))
        print(f"{title:<34}" + "".join(f" | {a:>6.3f} {b:>6.2f} {c:>8.3f} " for a, b, c in cells))
    print()
    built, p50, p90, again, cpu, n = speed(root)
    print(f"Warm recall in process, 10,000 memories (LongMemEval turns), {n} questions: "
          f"p50 {p50:.1f} ms, p90 {p90:.1f} ms, CPU p50 {cpu:.1f} ms (asked again: p50 {again:.1f} ms); "
          f"building the index {built:.2f} s; load average {os.getloadavg()[0]:.1f}")
    print()
    print("Rerun: python bench/bench_recall.py --before /tmp/before-ec2   (make bench-recall: no --before)")


if __name__ == "__main__":
    main()
