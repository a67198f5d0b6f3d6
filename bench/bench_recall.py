"""Recall-quality benchmark: gitmem's rankers and their fusion on two labelled sets.

1. Code memories: fixtures/recall/memories.yaml (developer memories about a fictional web
   service) and fixtures/recall/queries.yaml (queries phrased differently, 1-3 relevant ids
   each): recall@5 and MRR (1 / rank of the first relevant memory, any rank).
2. Long real conversations, when ``../shared/eval/locomo-dev/`` (beside the repository) is
   present: the LoCoMo development split (README there; CC BY-NC 4.0, read from there, never
   copied here). One memory per dialogue turn, each conversation its own store; hit@5,
   recall@5 and MRR@10 per question category, next to a plain Okapi BM25 reference (k1 1.2,
   b 0.75, lowercase ``[a-z0-9]+`` tokens, NLTK's English stop words, no stemming).
   Skipped, with a line saying so, when the directory is absent.

Run from the repository root:  python bench/bench_recall.py [--locomo DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gitmem.context.analysis import STOPWORDS  # noqa: E402
from gitmem.context.recall import (  # noqa: E402
    BM25_B,
    BM25_K1,
    RRF_K,
    RRF_WEIGHTS,
    TRIGRAM_FLOOR,
    RecallIndex,
    observed_times,
    rank_memories,
    trigram_scores,
)
from gitmem.record.models import Memory  # noqa: E402
from tests.bm25_oracle import bm25_scores  # noqa: E402 - the bm25s oracle (test extra)

K = 5
LOCOMO = ROOT.parent / "shared" / "eval" / "locomo-dev"
CATEGORIES = ("single-hop", "multi-hop", "temporal", "open-domain")


def load(data_dir: Path = ROOT / "fixtures" / "recall") -> tuple[list[Memory], list[dict]]:
    raw = yaml.safe_load((data_dir / "memories.yaml").read_text())
    memories = [
        Memory(
            id=r["id"],
            type=r["type"],
            content=r["content"],
            confidence=r["confidence"],
            provenance={"observed_at": r["observed_at"]},
            decay={"last_verified_at": r["observed_at"], "half_life_days": 90},
        )
        for r in raw
    ]
    queries = yaml.safe_load((data_dir / "queries.yaml").read_text())
    return memories, queries


def by_score(memories: list[Memory], scores: list[float], floor: float) -> list[str]:
    pairs = [(-s, m.id) for m, s in zip(memories, scores, strict=True) if s > 0 and s >= floor]
    return [memory_id for _, memory_id in sorted(pairs)]


def fused(query: str, memories: list[Memory], index: RecallIndex | None = None,
          **weights: float) -> list[str]:
    return [h.memory.id for h in rank_memories(query, memories, {**RRF_WEIGHTS, **weights}, index)]


def metrics(ranking: list[str], relevant: set[str]) -> tuple[float, float]:
    found = len(relevant & set(ranking[:K])) / len(relevant)
    first = next((i for i, memory_id in enumerate(ranking, start=1) if memory_id in relevant), None)
    return found, (1.0 / first if first else 0.0)


def run() -> dict[str, tuple[float, float]]:
    """Code-memory set: ranker -> (recall@5, MRR)."""
    memories, queries = load()
    texts = [m.content for m in memories]
    observed = observed_times(memories)
    index = RecallIndex.build(texts, observed)
    totals: dict[str, list[float]] = {}
    for q in queries:
        relevant = set(q["relevant"])
        query = q["query"]
        rankings = {
            "bm25": by_score(memories, bm25_scores(query, texts, observed), 0.0),
            "trigram": by_score(memories, trigram_scores(query, texts), TRIGRAM_FLOOR),
            "fusion (gitmem default)": fused(query, memories, index),
            "fusion, no trigram": fused(query, memories, index, trigram=0.0),
            "fusion, recency weight 0.25": fused(query, memories, index, recency=0.25),
            "fusion, recency weight 1": fused(query, memories, index, recency=1.0),
        }
        for name, ranking in rankings.items():
            r, rr = metrics(ranking, relevant)
            acc = totals.setdefault(name, [0.0, 0.0])
            acc[0] += r
            acc[1] += rr
    n = len(queries)
    return {name: (acc[0] / n, acc[1] / n) for name, acc in totals.items()}


# -- LoCoMo development split ---------------------------------------------------------------------

_PLAIN = re.compile(r"[a-z0-9]+")


def plain_terms(text: str) -> list[str]:
    """The reference's tokens: lowercase ``[a-z0-9]+``, NLTK English stop words dropped."""
    return [t for t in _PLAIN.findall(text.lower()) if t not in STOPWORDS]


class PlainBM25:
    """Okapi BM25 (Robertson & Zaragoza 2009; k1 1.2, b 0.75, idf ``ln(1 + (N-df+.5)/(df+.5))``)."""

    def __init__(self, texts: list[str], k1: float = 1.2, b: float = 0.75) -> None:
        self.docs = [Counter(plain_terms(t)) for t in texts]
        self.lengths = [sum(d.values()) for d in self.docs]
        self.avg = sum(self.lengths) / len(self.docs)
        self.df = Counter(t for d in self.docs for t in d)
        self.k1, self.b = k1, b

    def scores(self, query: str) -> list[float]:
        n = len(self.docs)
        out = [0.0] * n
        for term in set(plain_terms(query)):
            df = self.df.get(term)
            if not df:
                continue
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            for i, doc in enumerate(self.docs):
                tf = doc.get(term)
                if tf:
                    norm = self.k1 * (1 - self.b + self.b * self.lengths[i] / self.avg)
                    out[i] += idf * tf * (self.k1 + 1) / (tf + norm)
        return out


def load_locomo(data_dir: Path) -> tuple[dict[str, list[Memory]], list[dict]]:
    """Memories per conversation (content = the turn's text, observed = the session's time)."""
    conversations: dict[str, list[Memory]] = defaultdict(list)
    for n, row in enumerate(json.loads((data_dir / "memories.json").read_text())):
        memory = Memory(
            id=f"fact-{n:08x}",
            type="fact",
            content=row["text"],
            confidence=1.0,
            provenance={"observed_at": row["observed_at"]},
            decay={"last_verified_at": row["observed_at"], "half_life_days": None},
            legacy_id=row["id"],
        )
        conversations[row["conversation_id"]].append(memory)
    return conversations, json.loads((data_dir / "queries.json").read_text())


def locomo_rankers(memories: list[Memory]) -> dict[str, Callable[[str], list[str]]]:
    """Ranker name -> (question -> memory ids, best first), for one conversation."""
    texts = [m.content for m in memories]
    index = RecallIndex.build(texts, observed_times(memories))
    plain = PlainBM25(texts)
    return {
        "plain BM25": lambda q: by_score(memories, plain.scores(q), 0.0),
        "gitmem bm25": lambda q: by_score(memories, index.bm25_scores(q), 0.0),
        "gitmem trigram": lambda q: by_score(memories, index.trigram_scores(q), TRIGRAM_FLOOR),
        "gitmem fusion": lambda q: fused(q, memories, index),
    }


def run_locomo(data_dir: Path = LOCOMO) -> dict[str, dict[str, tuple[float, float, float, int]]]:
    """Ranker -> category (and ``all``) -> (hit@5, recall@5, MRR@10, questions)."""
    conversations, questions = load_locomo(data_dir)
    by_legacy = {m.legacy_id: m.id for ms in conversations.values() for m in ms}
    rankers = {c: locomo_rankers(ms) for c, ms in conversations.items()}
    sums: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(lambda: [0, 0, 0, 0]))
    for q in questions:
        evidence = {by_legacy[e] for e in q["evidence"]}
        for name, rank in rankers[q["conversation_id"]].items():
            ranking = rank(q["question"])
            top = evidence & set(ranking[:K])
            first = next((i for i, m in enumerate(ranking[:10], start=1) if m in evidence), None)
            for category in (q["category_name"], "all"):
                acc = sums[name][category]
                acc[0] += bool(top)
                acc[1] += len(top) / len(evidence)
                acc[2] += 1 / first if first else 0.0
                acc[3] += 1
    return {name: {c: (a[0] / a[3], a[1] / a[3], a[2] / a[3], a[3]) for c, a in cats.items()}
            for name, cats in sums.items()}


def print_locomo(figures: dict[str, dict[str, tuple[float, float, float, int]]]) -> None:
    names = list(figures)
    print(f"{'':<13}{'':>5}" + "".join(f" | {name:^20}" for name in names))
    print(f"{'category':<13}{'n':>5}" + " | hit@5  rec@5  MRR@10" * len(names))
    for category in (*CATEGORIES, "all"):
        n = figures[names[0]][category][3]
        cells = "".join(" | {:.3f}  {:.3f}  {:>6.3f}".format(*figures[name][category][:3])
                        for name in names)
        print(f"{category:<13}{n:>5}{cells}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, default=LOCOMO,
                        help="LoCoMo development split directory (default: %(default)s)")
    args = parser.parse_args()
    memories, queries = load()
    print(f"BM25 k1={BM25_K1} b={BM25_B}, RRF k={RRF_K}, weights {RRF_WEIGHTS}, "
          f"trigram floor {TRIGRAM_FLOOR}")
    print()
    print(f"Code memories: {len(memories)} memories, {len(queries)} queries, k={K}")
    print(f"{'ranker':<32} {'recall@5':>9} {'MRR':>7}")
    for name, (r, mrr) in run().items():
        print(f"{name:<32} {r:>9.3f} {mrr:>7.3f}")
    print()
    if not (args.locomo / "memories.json").is_file():
        print(f"LoCoMo development split: skipped, {args.locomo} is absent")
        return
    figures = run_locomo(args.locomo)
    n = figures["plain BM25"]["all"][3]
    print(f"LoCoMo development split ({args.locomo.name}): {n} questions, "
          "one store per conversation, MRR@10")
    print_locomo(figures)


if __name__ == "__main__":
    main()
