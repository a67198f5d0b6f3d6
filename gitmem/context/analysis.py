r"""Text analysis for recall: words, identifier parts, English stop words and Snowball stems.

A text becomes BM25 terms in four steps:

1. **Words**: maximal runs of letters and digits (``[^\W_]+``, Unicode-aware), so that
   ``snake_case``, ``a/b/c.py`` and ``don't`` split at ``_``, ``/``, ``.`` and ``'``.
2. **Identifier parts**: each word is split at camelCase humps and letter/digit borders
   (``RecordCache`` → ``Record``, ``Cache``; ``HTTPServer`` → ``HTTP``, ``Server``;
   ``utf8`` → ``utf``, ``8``), so an identifier matches the words it is made of. Case is
   Unicode's: ``façade`` stays whole.
3. **Stop words**: parts are lowercased and English function words dropped: the NLTK English
   list (179 words: pronouns, auxiliaries, articles, prepositions and the contraction pieces
   ``s``, ``t``, ``ll``, ``ve``, ``re``, ``m``, ``d``), as shipped by bm25s
   (``bm25s.stopwords.STOPWORDS_EN_PLUS``), plus ``could`` and ``would``.
4. **Stems**: the Snowball English (Porter 2) stemmer (M. F. Porter, "Snowball: a language for
   stemming algorithms", 2001; https://snowballstem.org/algorithms/english/stemmer.html), from
   PyStemmer, the C implementation bm25s accepts: ``caching``/``caches``/``cached`` →
   ``cach``, ``memories`` → ``memori``.

Everything is local: the stop list is written out below and the stemmer is a compiled
extension (about 2 ms to import). :data:`VERSION` names the analysis; an index built by another
analysis must not be used (:mod:`gitmem.cache` keys recall indexes by it).
"""

from __future__ import annotations

import functools
import re

import Stemmer

__all__ = ["STOPWORDS", "VERSION", "identifier_parts", "stem", "tokenize", "words"]

#: NLTK's English stop words (179), as bm25s ships them (``bm25s.stopwords.STOPWORDS_EN_PLUS``;
#: ``tests/test_analysis.py`` compares them). Written out here: the list is data, and recall
#: should not need bm25s installed to read it.
_NLTK_ENGLISH = (
    'a', 'about', 'above', 'after', 'again', 'against', 'ain', 'all', 'am', 'an', 'and', 'any',
    'are', 'aren', "aren't", 'as', 'at', 'be', 'because', 'been', 'before', 'being', 'below',
    'between', 'both', 'but', 'by', 'can', 'couldn', "couldn't", 'd', 'did', 'didn', "didn't", 'do',
    'does', 'doesn', "doesn't", 'doing', 'don', "don't", 'down', 'during', 'each', 'few', 'for',
    'from', 'further', 'had', 'hadn', "hadn't", 'has', 'hasn', "hasn't", 'have', 'haven', "haven't",
    'having', 'he', 'her', 'here', 'hers', 'herself', 'him', 'himself', 'his', 'how', 'i', 'if',
    'in', 'into', 'is', 'isn', "isn't", 'it', "it's", 'its', 'itself', 'just', 'll', 'm', 'ma',
    'me', 'mightn', "mightn't", 'more', 'most', 'mustn', "mustn't", 'my', 'myself', 'needn',
    "needn't", 'no', 'nor', 'not', 'now', 'o', 'of', 'off', 'on', 'once', 'only', 'or', 'other',
    'our', 'ours', 'ourselves', 'out', 'over', 'own', 're', 's', 'same', 'shan', "shan't", 'she',
    "she's", 'should', "should've", 'shouldn', "shouldn't", 'so', 'some', 'such', 't', 'than',
    'that', "that'll", 'the', 'their', 'theirs', 'them', 'themselves', 'then', 'there', 'these',
    'they', 'this', 'those', 'through', 'to', 'too', 'under', 'until', 'up', 've', 'very', 'was',
    'wasn', "wasn't", 'we', 'were', 'weren', "weren't", 'what', 'when', 'where', 'which', 'while',
    'who', 'whom', 'why', 'will', 'with', 'won', "won't", 'wouldn', "wouldn't", 'y', 'you', "you'd",
    "you'll", "you're", "you've", 'your', 'yours', 'yourself', 'yourselves',
)
_EXTRA_STOPWORDS = ("could", "would")  # modal auxiliaries NLTK's list lacks

STOPWORDS: frozenset[str] = frozenset(_NLTK_ENGLISH) | frozenset(_EXTRA_STOPWORDS)
"""Lowercase English stop words (see the module docstring); none is ever a term."""

# PyStemmer's own word cache (10,000 words by default) off: :func:`_stem` memoises already, and
# two memos of one mapping held every stemmed word twice in a long-lived process (``tur mcp``).
_STEMMER = Stemmer.Stemmer("english", 0)
VERSION = f"words2-nltk179+2-snowball-english-{Stemmer.version()}"
"""Names this analysis (word split, stop list, stemmer and its version) for cache keys."""

_WORD = re.compile(r"[^\W_]+")


def words(text: str) -> list[str]:
    """Step 1: the runs of letters and digits of ``text``, as they are (not lowercased)."""
    return _WORD.findall(text)


def identifier_parts(word: str) -> list[str]:
    """Step 2: ``word`` split at camelCase humps and letter/digit borders, as they are.

    A part starts at a digit after a non-digit and the reverse, at an upper-case letter after
    a letter that is not upper case (``recordCache``), and at the last upper-case letter of a
    run followed by a lower-case one (``HTTPServer``). Case is Unicode's, so ``façade`` and
    ``Ünïcode`` stay whole; on ASCII words this is the split gitmem always made.
    """
    if word.isalpha() and (word.islower() or word.isupper()):  # the usual words: no border
        return [word]
    parts: list[str] = []
    start = 0
    last = len(word) - 1
    for i in range(1, len(word)):
        before, here = word[i - 1], word[i]
        if (before.isdigit() != here.isdigit()
                or (here.isupper() and not before.isupper() and not before.isdigit())
                or (here.isupper() and before.isupper() and i < last and word[i + 1].islower())):
            parts.append(word[start:i])
            start = i
    parts.append(word[start:])
    return parts


#: Words (and stems) memoised per process. A vocabulary is Zipf-distributed: 16,384 words
#: hit 96 % of the words of 30,000 LongMemEval turns (65,536: 97 %, for four times the
#: memory), and they bound what a long-running process holds to about 3 MiB per cache.
_MEMOISED_WORDS = 1 << 14


def stem(term: str) -> str:
    """Step 4: the Snowball English stem of a lowercase term (memoised)."""
    return _stem(term)


@functools.lru_cache(maxsize=_MEMOISED_WORDS)
def _stem(term: str) -> str:
    return _STEMMER.stemWord(term)


def tokenize(text: str) -> list[str]:
    """BM25 terms of ``text``: steps 1-4 of the module docstring, in text order.

    ``"The RecordCache keeps parsed_records"`` → ``["record", "cach", "keep", "pars",
    "record"]``.
    """
    out: list[str] = []
    for word in _WORD.findall(text):
        out.extend(_word_terms(word))
    return out


# Words repeat across memories, so the per-word work is memoised (bounded, for long-lived
# processes): indexing 100,000 memories then costs a dictionary lookup per word.
@functools.lru_cache(maxsize=_MEMOISED_WORDS)
def _word_terms(word: str) -> tuple[str, ...]:
    out = []
    for part in identifier_parts(word):
        lower = part.lower()
        if lower not in STOPWORDS:
            out.append(_stem(lower))
    return tuple(out)
