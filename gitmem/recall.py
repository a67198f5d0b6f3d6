"""Query-time recall: BM25, recency and character-trigram rankers fused by reciprocal rank fusion.

Source of the fusion: G. V. Cormack, C. L. A. Clarke, S. Büttcher, "Reciprocal rank fusion
outperforms Condorcet and individual rank learning methods", SIGIR 2009:
``score(d) = Σ_r w_r / (k + rank_r(d))`` over the rankers that rank ``d``, with ``k = 60``.
Cormack et al. weight every ranker 1; here recency gets :data:`RRF_WEIGHTS` ``0.25``
(weighted RRF) because it is a prior, not evidence of relevance: at full weight it reorders
the whole affinity pool by date and cost recall@5 on the labelled set of
``bench/bench_recall.py`` (0.721 against 0.739 for BM25 alone); at a quarter it only breaks
near-ties between lexical matches.
"""

from __future__ import annotations

import functools
import json
import math
import re
from array import array
from collections import Counter as Multiset
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from gitmem.decay import microseconds
from gitmem.defaults import RECALL_TOP_K
from gitmem.entry import RECALL_FORMATS, format_hits
from gitmem.errors import InvalidInput
from gitmem.relations import superseded_by
from gitmem.vocabulary import Status

if TYPE_CHECKING:
    from gitmem.models import Memory

__all__ = [
    "RRF_K",
    "RRF_WEIGHTS",
    "TRIGRAM_FLOOR",
    "Hit",
    "RecallIndex",
    "RecallResult",
    "bm25_scores",
    "query_from_payload",
    "rank_memories",
    "recall",
    "select_candidates",
    "tokenize",
    "trigram_scores",
]

RRF_K = 60
"""The ``k`` of reciprocal rank fusion (Cormack et al. 2009)."""
RRF_WEIGHTS = {"bm25": 1.0, "trigram": 1.0, "recency": 0.25}
"""Weight of each ranker in the fusion (see the module docstring)."""
TRIGRAM_FLOOR = 0.15
"""Trigram cosine below which a memory has no trigram affinity to the query."""
MAX_QUERY_CHARS = 4000
"""A longer query (e.g. a pasted log in a prompt) is cut to this many characters."""

# A tiny built-in list: function words carry no affinity, and no list is ever downloaded.
_STOPWORDS = frozenset(
    [
        "a", "an", "and", "are", "as", "at", "be", "been", "but", "by", "can", "could", "did",
        "do", "does", "for", "from", "had", "has", "have", "how", "i", "if", "in", "into", "is",
        "it", "its", "me", "my", "no", "not", "of", "on", "or", "our", "should", "so", "than",
        "that", "the", "their", "them", "then", "there", "these", "this", "those", "to", "was",
        "we", "were", "what", "when", "where", "which", "who", "why", "will", "with", "would",
        "you", "your",
    ]
)
_WORD = re.compile(r"[^\W_]+")
_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+|[^\W_]+")


def _stem(word: str) -> str:
    # Light suffix stripping so that cache / caches / cached / caching meet; no dictionary.
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    for suffix in ("ing", "ed"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            word = word[: -len(suffix)]
            break
    if len(word) > 4 and word.endswith("e"):
        word = word[:-1]
    return word


def tokenize(text: str) -> list[str]:
    """BM25 terms of ``text``.

    Words are split at non-alphanumerics and at camelCase humps, lowercased, stop words
    dropped (a small built-in list) and lightly stemmed (``caching`` → ``cach``).
    """
    terms: list[str] = []
    for word in _WORD.findall(text):
        terms.extend(_word_terms(word))
    return terms


# Words repeat across memories, so the per-word work is memoised (bounded, for long-lived
# processes): indexing 100,000 memories then costs a dictionary lookup per word.
@functools.lru_cache(maxsize=1 << 16)
def _word_terms(word: str) -> tuple[str, ...]:
    terms = []
    for part in _CAMEL.findall(word):
        lower = part.lower()
        if lower not in _STOPWORDS:
            terms.append(_stem(lower))
    return tuple(terms)


@functools.lru_cache(maxsize=1 << 16)
def _word_trigrams(word: str) -> tuple[str, ...]:
    padded = f" {word} "
    return tuple(padded[i : i + 3] for i in range(len(padded) - 2))


def _trigrams(text: str) -> Multiset[str]:
    grams: Multiset[str] = Multiset()
    for word in _WORD.findall(text.lower()):
        if word in _STOPWORDS:
            continue
        grams.update(_word_trigrams(word))
    return grams


def trigram_scores(query: str, documents: Sequence[str]) -> list[float]:
    """Cosine similarity in [0, 1] of character-trigram count vectors, query against each document.

    Words are lowercased and padded with one space each side; stop words are left out.
    """
    q = _trigrams(query)
    q_norm = math.sqrt(sum(v * v for v in q.values()))
    scores = []
    for document in documents:
        d = _trigrams(document)
        dot = sum(v * d[g] for g, v in q.items() if g in d)
        d_norm = math.sqrt(sum(v * v for v in d.values()))
        scores.append(dot / (q_norm * d_norm) if dot else 0.0)
    return scores


def bm25_scores(query: str, documents: Sequence[str]) -> list[float]:
    """BM25 score of each document for ``query``, terms from :func:`tokenize`.

    bm25s defaults (Lucene variant, k1 = 1.5, b = 0.75); 0 means no query term occurs in the
    document.
    """
    terms = tokenize(query)
    corpus = [tokenize(d) for d in documents]
    vocabulary = {t for doc in corpus for t in doc}
    terms = [t for t in terms if t in vocabulary]
    if not terms:
        return [0.0] * len(documents)
    import bm25s  # lazy: it pulls in numpy and costs ~0.2 s to import

    retriever = bm25s.BM25()
    retriever.index(corpus, show_progress=False)
    return [float(s) for s in retriever.get_scores(terms)]


class RecallIndex:
    """BM25 and trigram postings of a fixed list of documents, for scoring without re-indexing.

    :meth:`bm25_scores` and :meth:`trigram_scores` return exactly what :func:`bm25_scores`
    and :func:`trigram_scores` return for the same documents: the BM25 part keeps bm25s'
    precomputed per-(term, document) float32 scores (its eager index) and adds them per query
    term in float32, as ``BM25.get_scores`` does; the trigram part keeps integer counts and
    the same norms. Scoring needs neither numpy nor bm25s, whose import alone costs more than
    a warm recall may; they are imported only by :meth:`build`. The payload is plain bytes and
    strings (see :mod:`gitmem.cache`).

    Args:
        size: number of documents.
        vocab: BM25 term -> column.
        indptr, indices, data: bm25s' CSC score matrix (int64, int32, float32).
        grams: trigram -> (document numbers, counts), each an ``array("i")`` as bytes.
        norms: Euclidean norm of each document's trigram count vector.
    """

    def __init__(self, size: int, vocab: dict[str, int], indptr: array, indices: array,
                 data: array, grams: dict[str, tuple[bytes, bytes]], norms: array) -> None:
        self.size = size
        self.vocab = vocab
        self.indptr = indptr
        self.indices = indices
        self.data = data
        self.grams = grams
        self.norms = norms

    @classmethod
    def build(cls, documents: Sequence[str]) -> RecallIndex:
        """Index ``documents`` (bm25s defaults, as :func:`bm25_scores`)."""
        corpus = [tokenize(d) for d in documents]
        vocab: dict[str, int] = {}
        indptr, indices, data = array("q", [0]), array("i"), array("f")
        if any(corpus):
            import bm25s  # lazy: it pulls in numpy

            retriever = bm25s.BM25()
            retriever.index(corpus, show_progress=False)
            scores = retriever.scores
            # bm25s adds an empty token with no column; a query term is never empty.
            vocab = {str(k): int(v) for k, v in retriever.vocab_dict.items() if k}
            indptr = array("q", scores["indptr"].astype("int64").tobytes())
            indices = array("i", scores["indices"].astype("int32").tobytes())
            data = array("f", scores["data"].astype("float32").tobytes())
        postings: dict[str, tuple[array, array]] = {}
        norms = array("d")
        for number, document in enumerate(documents):
            counts = _trigrams(document)
            norms.append(math.sqrt(sum(v * v for v in counts.values())))
            for gram, count in counts.items():
                ids_counts = postings.get(gram)
                if ids_counts is None:
                    ids_counts = postings[gram] = (array("i"), array("i"))
                ids_counts[0].append(number)
                ids_counts[1].append(count)
        grams = {g: (ids.tobytes(), counts.tobytes()) for g, (ids, counts) in postings.items()}
        return cls(len(documents), vocab, indptr, indices, data, grams, norms)

    def to_payload(self) -> dict[str, Any]:
        """The index as marshal-able plain values."""
        return {
            "size": self.size,
            "vocab": self.vocab,
            "indptr": self.indptr.tobytes(),
            "indices": self.indices.tobytes(),
            "data": self.data.tobytes(),
            "grams": self.grams,
            "norms": self.norms.tobytes(),
        }

    @classmethod
    def from_payload(cls, payload: Any, size: int) -> RecallIndex:
        """Rebuild an index from :meth:`to_payload`'s value, checking its shape.

        Raises:
            ValueError, TypeError, KeyError: not an index of ``size`` documents.
        """
        if not isinstance(payload, dict) or payload["size"] != size:
            raise ValueError("index of another document list")
        vocab, grams = payload["vocab"], payload["grams"]
        if not isinstance(vocab, dict) or not isinstance(grams, dict):
            raise TypeError("vocab and grams")
        indptr, indices, data, norms = array("q"), array("i"), array("f"), array("d")
        indptr.frombytes(payload["indptr"])
        indices.frombytes(payload["indices"])
        data.frombytes(payload["data"])
        norms.frombytes(payload["norms"])
        if len(norms) != size or len(indices) != len(data) or (vocab and indptr[-1] != len(data)):
            raise ValueError("inconsistent arrays")
        if any(not 0 <= c < len(indptr) - 1 for c in vocab.values()):
            raise ValueError("vocabulary out of range")
        return cls(size, vocab, indptr, indices, data, grams, norms)

    def bm25_scores(self, query: str) -> list[float]:
        """As :func:`bm25_scores` of ``query`` over the indexed documents."""
        columns = [self.vocab[t] for t in tokenize(query) if t in self.vocab]
        if not columns:
            return [0.0] * self.size
        scores = array("f", bytes(4 * self.size))  # float32: each += rounds as numpy's would
        indptr, indices, data = self.indptr, self.indices, self.data
        for column in columns:
            for j in range(indptr[column], indptr[column + 1]):
                scores[indices[j]] += data[j]
        return scores.tolist()

    def trigram_scores(self, query: str) -> list[float]:
        """As :func:`trigram_scores` of ``query`` over the indexed documents."""
        q = _trigrams(query)
        q_norm = math.sqrt(sum(v * v for v in q.values()))
        dots = [0] * self.size
        for gram, v in q.items():
            found = self.grams.get(gram)
            if found is None:
                continue
            ids, counts = array("i"), array("i")
            ids.frombytes(found[0])
            counts.frombytes(found[1])
            for number, count in zip(ids, counts, strict=True):
                dots[number] += v * count
        norms = self.norms
        return [dot / (q_norm * norms[n]) if dot else 0.0 for n, dot in enumerate(dots)]


@dataclass(frozen=True)
class Hit:
    """One recalled memory.

    Attributes:
        memory: the record.
        score: its RRF score.
        ranks: 1-based rank per ranker (``bm25``, ``trigram``, ``recency``); ``None`` where
            that ranker did not rank it.
        stale: whether it is stale or superseded (only with ``include_stale``).
        bm25: its BM25 score (0 = no query term).
        trigram: its trigram cosine.
        stale_reason: why it is stale (the recorded reason, or ``superseded by <id>``).
    """

    memory: Memory
    score: float
    ranks: dict[str, int | None]
    stale: bool
    bm25: float
    trigram: float
    stale_reason: str | None = None


@dataclass(frozen=True)
class RecallResult:
    """Hits of one recall, best first.

    Attributes:
        query: the query.
        hits: at most ``top_k`` hits, fitting ``token_budget`` when rendered in ``format``.
        omitted: hits among the top ``top_k`` left out for budget.
        format: the format the budget was measured in.
    """

    query: str
    hits: tuple[Hit, ...]
    omitted: int = 0
    format: str = "markdown-prompt"


def _ranks(keys: Iterable[tuple[float, str]]) -> dict[str, int]:
    # Competition ranking ("1224"): equal scores share a rank, so that a tie in one ranker
    # is left for the others to break instead of being broken by id.
    ranks: dict[str, int] = {}
    previous = None
    rank = 0
    for position, (key, memory_id) in enumerate(sorted(keys), start=1):
        if key != previous:
            rank, previous = position, key
        ranks[memory_id] = rank
    return ranks


def _verified_us(memory: Memory) -> int | None:
    """``last_verified_at`` in microseconds (exact, so two times never tie by rounding)."""
    known = getattr(memory, "verified_us", None)  # a cache MemoryView carries it ready
    if known is not None:
        return known
    at = memory.last_verified_at
    return None if at is None else microseconds(at)


def rank_memories(
    query: str,
    memories: Sequence[Memory],
    weights: Mapping[str, float] = RRF_WEIGHTS,
    index: RecallIndex | None = None,
    limit: int | None = None,
) -> list[Hit]:
    """Every memory with affinity to ``query``, fused and sorted best first (ties by id).

    Affinity: BM25 score > 0 or trigram cosine >= :data:`TRIGRAM_FLOOR`. Recency (last
    verification, else observation time; legacy records are not ranked) orders only memories
    that have affinity, so recency alone never recalls.

    Args:
        query: free text.
        memories: candidates (no status filtering here).
        weights: weight per ranker name (``bm25``, ``trigram``, ``recency``) in the fusion.
        index: a :class:`RecallIndex` of ``[m.content for m in memories]`` (same scores,
            without indexing at query time); ``None`` indexes here.
        limit: return only the best ``limit`` hits (the first ``limit`` of the full list),
            building no hit for the rest.
    """
    if not query.strip() or not memories:
        return []
    if index is not None and index.size == len(memories):
        bm25 = index.bm25_scores(query)
        tri = index.trigram_scores(query)
    else:
        texts = [m.content for m in memories]
        bm25 = bm25_scores(query, texts)
        tri = trigram_scores(query, texts)
    # By position only: ``memories`` may build its items on access (cache views).
    pool = [i for i in range(len(memories)) if bm25[i] > 0 or tri[i] >= TRIGRAM_FLOOR]
    ranks = {
        "bm25": _ranks((-bm25[i], memories[i].id) for i in pool if bm25[i] > 0),
        "trigram": _ranks((-tri[i], memories[i].id) for i in pool if tri[i] >= TRIGRAM_FLOOR),
        "recency": _ranks(
            (-verified, memories[i].id)
            for i, verified in ((i, _verified_us(memories[i])) for i in pool)
            if verified is not None
        ),
    }
    scores = {}
    for i in pool:
        memory_id = memories[i].id
        scores[i] = sum(weights[name] / (RRF_K + ranking[memory_id])
                        for name, ranking in ranks.items() if memory_id in ranking)
    order = sorted(pool, key=lambda i: (-scores[i], memories[i].id))
    hits = []
    for i in order if limit is None else order[:limit]:
        memory = memories[i]
        own = {name: ranking.get(memory.id) for name, ranking in ranks.items()}
        stale = memory.status is Status.STALE
        reason = (memory.decay.reason if memory.decay else None) if stale else None
        hits.append(Hit(memory, scores[i], own, stale, bm25[i], tri[i], reason))
    return hits


def select_candidates(
    memories: Sequence[Memory], include_stale: bool = False
) -> tuple[list[Memory], dict[str, str]]:
    """The memories recall ranks, and the superseded ones (id -> the id superseding it).

    Refuted memories are never candidates. A memory superseded by one that is neither stale
    nor refuted is as outdated as a stale one: both are candidates only with
    ``include_stale``. Order is kept.
    """
    candidates = [m for m in memories if m.status is not Status.REFUTED]
    superseded = superseded_by(candidates, lambda m: m.status is not Status.STALE)
    if not include_stale:
        candidates = [
            m for m in candidates if m.status is not Status.STALE and m.id not in superseded
        ]
    return candidates, superseded


def recall(
    memories: Sequence[Memory],
    query: str,
    *,
    top_k: int = RECALL_TOP_K,
    include_stale: bool = False,
    token_budget: int | None = None,
    counter: Callable[[str], int] | None = None,
    fmt: str = "markdown-prompt",
    index: Callable[[Sequence[Memory]], RecallIndex] | None = None,
    materialize: Callable[[Memory], Memory] | None = None,
    selected: tuple[Sequence[Memory], Mapping[str, str]] | None = None,
) -> RecallResult:
    """The memories most relevant to ``query``, fused by RRF (see :func:`rank_memories`).

    Refuted memories never appear; stale ones, and ones superseded by a memory that is neither
    stale nor refuted, only with ``include_stale`` (and are marked stale, with the reason).
    With a ``token_budget`` the top ``top_k`` hits are taken in rank order, skipping any whose
    addition would make the output rendered in ``fmt`` exceed the budget (counted on the whole
    rendered string, so the cap is exact).

    Args:
        memories: candidate records.
        query: free text.
        top_k: maximum number of hits, >= 1.
        include_stale: let stale memories through.
        token_budget: tokens; ``None`` or 0 means no cap.
        counter: token counter; default :class:`gitmem.tokens.TokenCounter` (only with a budget).
        fmt: output format the budget is measured in, one of :data:`~gitmem.entry.RECALL_FORMATS`.
        index: given the candidates (refuted, and unless ``include_stale`` stale and
            superseded, memories left out; in the given order), returns their
            :class:`RecallIndex` (e.g. from a cache); ``None`` indexes at query time.
        materialize: turns a stand-in record (e.g. :class:`gitmem.cache.MemoryView`) into the
            full record, for the top ``top_k`` hits only; ``None`` keeps them as given.
        selected: what :func:`select_candidates` gives for ``memories`` and
            ``include_stale``, when the caller has it already (e.g. from cache columns);
            ``memories`` is then not read.

    Returns:
        The :class:`RecallResult`.

    Raises:
        InvalidInput: ``top_k`` < 1, a negative budget, or an unknown format.
        TokenizerUnavailable: the default counter's encoding cannot be loaded offline.
    """
    if top_k < 1:
        raise InvalidInput(f"top-k must be >= 1, got {top_k}")
    if token_budget is not None and token_budget < 0:
        raise InvalidInput(f"token budget must be >= 0, got {token_budget}", "0 means no cap")
    if fmt not in RECALL_FORMATS:
        hint = f"use one of {', '.join(RECALL_FORMATS)}"
        raise InvalidInput(f"unknown recall format {fmt!r}", hint)
    candidates, superseded = selected or select_candidates(memories, include_stale)
    ranked = [
        replace(hit, stale=True, stale_reason=f"superseded by {superseded[hit.memory.id]}")
        if hit.memory.id in superseded
        else hit
        for hit in rank_memories(
            query, candidates, index=index(candidates) if index and candidates else None,
            limit=top_k,
        )
    ]
    top = ranked  # rank_memories gave at most top_k
    if materialize is not None:
        top = [replace(hit, memory=materialize(hit.memory)) for hit in top]
    if not token_budget:
        return RecallResult(query, tuple(top), 0, fmt)
    from gitmem.tokens import TokenCounter

    if counter is None:
        counter = TokenCounter()
    # A BPE token is at least one byte, so a text of at most ``budget`` UTF-8 bytes fits
    # without counting: the common short recall never loads the BPE tables.
    bounded = isinstance(counter, TokenCounter)
    chosen: list[Hit] = []
    for hit in top:
        text = format_hits([*chosen, hit], fmt, query)
        if (bounded and len(text.encode("utf-8", "surrogatepass")) <= token_budget) or (
            counter(text) <= token_budget
        ):
            chosen.append(hit)
    return RecallResult(query, tuple(chosen), len(top) - len(chosen), fmt)


def query_from_payload(payload: bytes | str) -> str:
    """The user's prompt in a harness hook payload, or ``""``; never raises.

    Accepts a JSON object with one of ``prompt``, ``user_prompt``, ``query``, ``message``,
    ``input``, ``text`` (a string), or ``messages`` (a list whose last ``user`` message's
    ``content`` is a string or a list of ``{"type": "text", "text": ...}`` parts); a JSON
    string; or, when the payload is not JSON, the payload itself as text. Bytes are decoded as
    UTF-8 with replacement. The query is cut to :data:`MAX_QUERY_CHARS`.
    """
    try:
        text = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else str(payload)
        try:
            data = json.loads(text)
        except ValueError:
            return text.strip()[:MAX_QUERY_CHARS]
        return _prompt_of(data).strip()[:MAX_QUERY_CHARS]
    except Exception:  # a hook must never break the harness's turn
        return ""


def _prompt_of(data: object) -> str:
    if isinstance(data, str):
        return data
    if not isinstance(data, dict):
        return ""
    for key in ("prompt", "user_prompt", "query", "message", "input", "text"):
        if isinstance(data.get(key), str):
            return data[key]
    messages = data.get("messages")
    if isinstance(messages, list):
        for message in reversed(messages):
            if isinstance(message, dict) and message.get("role", "user") == "user":
                return _content_text(message.get("content"))
    return ""


def _content_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""
