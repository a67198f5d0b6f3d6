"""Recall-quality benchmark: recall@5 and MRR of BM25, trigram and their RRF fusion.

Labelled data: fixtures/recall/memories.yaml (developer memories about a fictional web
service) and fixtures/recall/queries.yaml (queries phrased differently, 1-3 relevant ids each).

Run from the repository root:  python bench/bench_recall.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gitmem.models import Memory  # noqa: E402
from gitmem.recall import (  # noqa: E402
    RRF_K,
    RRF_WEIGHTS,
    TRIGRAM_FLOOR,
    bm25_scores,
    rank_memories,
    trigram_scores,
)

K = 5


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


def fused(query: str, memories: list[Memory], **weights: float) -> list[str]:
    return [h.memory.id for h in rank_memories(query, memories, {**RRF_WEIGHTS, **weights})]


def metrics(ranking: list[str], relevant: set[str]) -> tuple[float, float]:
    found = len(relevant & set(ranking[:K])) / len(relevant)
    first = next((i for i, memory_id in enumerate(ranking, start=1) if memory_id in relevant), None)
    return found, (1.0 / first if first else 0.0)


def run() -> dict[str, tuple[float, float]]:
    memories, queries = load()
    texts = [m.content for m in memories]
    totals: dict[str, list[float]] = {}
    for q in queries:
        relevant = set(q["relevant"])
        query = q["query"]
        rankings = {
            "bm25": by_score(memories, bm25_scores(query, texts), 0.0),
            "trigram": by_score(memories, trigram_scores(query, texts), TRIGRAM_FLOOR),
            "fusion (gitmem default)": fused(query, memories),
            "fusion, no recency": fused(query, memories, recency=0.0),
            "fusion, recency weight 1": fused(query, memories, recency=1.0),
        }
        for name, ranking in rankings.items():
            r, rr = metrics(ranking, relevant)
            acc = totals.setdefault(name, [0.0, 0.0])
            acc[0] += r
            acc[1] += rr
    n = len(queries)
    return {name: (acc[0] / n, acc[1] / n) for name, acc in totals.items()}


def main() -> None:
    memories, queries = load()
    print(f"{len(memories)} memories, {len(queries)} queries, k={K}, RRF k={RRF_K}, "
          f"weights {RRF_WEIGHTS}, trigram floor {TRIGRAM_FLOOR}")
    print(f"{'ranker':<32} {'recall@5':>9} {'MRR':>7}")
    for name, (r, mrr) in run().items():
        print(f"{name:<32} {r:>9.3f} {mrr:>7.3f}")


if __name__ == "__main__":
    main()
