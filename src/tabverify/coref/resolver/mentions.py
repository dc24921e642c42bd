"""Mention detection over morphemes: every short span of a sentence is scored by a logistic model.

Candidates are the spans of at most :data:`MAX_LENGTH` morphemes inside one sentence that start on a
stem, an article or a suffix pronoun and end on a stem or a suffix (so never on a bare prefix). Features are the forms, kinds and letter endings at the span's
edges and just outside it, its length, and the punctuation inside; no gazetteers. Decoding keeps the
spans scoring above the model's threshold, best first, dropping any that crosses a kept span
(nesting is allowed: KibutzR nests mentions).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tabverify.coref.resolver.data import MorphRange, Token
from tabverify.coref.resolver.model import LinearModel

MAX_LENGTH = 12
"""The longest candidate in morphemes (90% of KibutzR train mentions have at most 10)."""

_STARTS = frozenset({"stem", "article", "suffix"})
_ENDS = frozenset({"stem", "suffix"})


def candidates(tokens: Sequence[Token]) -> list[MorphRange]:
    """The candidate spans of a document, in text order."""
    spans = []
    n = len(tokens)
    for first, token in enumerate(tokens):
        if token.kind not in _STARTS or token.form.endswith("_") and token.kind == "suffix":
            continue
        for last in range(first, min(n, first + MAX_LENGTH)):
            if tokens[last].sentence != token.sentence:
                break
            if tokens[last].kind not in _ENDS or tokens[last].form.endswith("_"):
                continue
            spans.append((first, last))
    return spans


def _ending(form: str) -> str:
    return form[-2:] if len(form) > 2 else form


def _shape(token: Token | None) -> str:
    if token is None:
        return "<none>"
    if token.kind in ("stem", "punct"):
        return f"{token.kind}:{token.form}"
    return token.kind + ":" + token.form


def span_features(tokens: Sequence[Token], first: int, last: int) -> list[str]:
    """The features of the candidate ``tokens[first..last]``."""
    a, b = tokens[first], tokens[last]
    before = tokens[first - 1] if first else None
    after = tokens[last + 1] if last + 1 < len(tokens) else None
    before2 = tokens[first - 2] if first > 1 else None
    length = last - first + 1
    size = str(length) if length < 6 else "6+"
    inner = tokens[first : last + 1]
    punct = sorted({t.form for t in inner if t.kind == "punct"})
    quotes = sum(t.form in ('"', "״") for t in inner)
    head = next((t for t in inner if t.kind == "stem"), a)
    features = [
        "bias",
        f"len={size}",
        f"first={a.form}",
        f"last={b.form}",
        f"head={head.form}",
        f"first_kind={a.kind}|len={size}",
        f"last_kind={b.kind}",
        f"before={_shape(before)}",
        f"after={_shape(after)}",
        f"before2={_shape(before2)}|before={_shape(before)}",
        f"first={a.form}|last={b.form}",
        f"before={_shape(before)}|first={a.form}",
        f"last={b.form}|after={_shape(after)}",
        f"first_end={_ending(a.form)}",
        f"last_end={_ending(b.form)}",
        f"head_end={_ending(head.form)}|len={size}",
        f"first_start={a.form[:2]}",
        f"quotes={quotes % 2}",
        f"after_kind={after.kind if after else '<none>'}|last_kind={b.kind}",
        f"before_kind={before.kind if before else '<none>'}|first_kind={a.kind}",
    ]
    features += [f"punct={p}|len={size}" for p in punct]
    features += [f"inner={t.form}" for t in inner[1:-1] if t.kind in ("stem", "prefix")][:8]
    after2 = tokens[last + 2] if last + 2 < len(tokens) else None
    features.append(f"after={_shape(after)}|after2={_shape(after2)}")
    features.append(f"pattern={''.join(t.kind[0] for t in inner[:7])}")
    features.append(f"first={a.form}|len={size}")
    if length > 1:
        second = tokens[first + 1]
        features.append(f"second={_shape(second)}|first_kind={a.kind}")
        features.append(f"penult={_shape(tokens[last - 1])}|last_kind={b.kind}")
    return features


def _crosses(x: MorphRange, y: MorphRange) -> bool:
    return x[0] < y[0] <= x[1] < y[1] or y[0] < x[0] <= y[1] < x[1]


def scored(tokens: Sequence[Token], model: LinearModel) -> tuple[list[MorphRange], np.ndarray]:
    """The candidate spans of a document and the model's log-odds of each."""
    spans = candidates(tokens)
    if not spans:
        return [], np.zeros(0)
    return spans, model.scores([span_features(tokens, a, b) for a, b in spans])


def select(spans: Sequence[MorphRange], scores: np.ndarray, threshold: float) -> list[MorphRange]:
    """The spans scoring above ``threshold``, best first, less any that crosses a kept one; in text order."""
    kept: list[MorphRange] = []
    for i in np.argsort(-np.asarray(scores), kind="stable"):
        if scores[i] <= threshold:
            break
        span = spans[i]
        if not any(_crosses(span, other) for other in kept):
            kept.append(span)
    return sorted(kept)


def detect(tokens: Sequence[Token], model: LinearModel) -> list[MorphRange]:
    """The mentions of a document, in text order (the model's own threshold)."""
    return select(*scored(tokens, model), model.threshold)
