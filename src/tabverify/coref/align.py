"""Mention alignment: which response mention stands for which key mention, one-to-one.

Modes:

- ``exact``: the same word spans (for character formats, the same characters).
- ``partial`` (the CorefUD scorer's): a response mention S matches key mention K when S's words
  are all in K and K's head is among them; score |K∩S|/|K|.
- ``head``: the same head word; among several, the larger proportional overlap wins.
- ``overlap`` (character protocol): alignable when the characters both cover are at least
  ``threshold`` of the shorter mention, so a 1-character suffix marked as the whole word still
  aligns; among alignable pairs the assignment maximises IoU.

In every mode identical mentions are paired first; the rest is a maximum-weight one-to-one
assignment (Hungarian) with zero-weight pairs dropped; mentions are taken in text order, so ties go
to the earlier start, then the earlier end.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence

from tabverify.coref.assignment import max_weight_assignment, sparse_max_weight_assignment
from tabverify.coref.document import Mention
from tabverify.errors import TabverifyError

MATCH_MODES = ("exact", "partial", "head", "overlap")


def _partial(key: Mention, response: Mention) -> float:
    k, s = set(key.units), set(response.units)
    if not s <= k or (key.head is not None and key.head not in s):
        return 0.0
    return len(k & s) / len(k)


def _head(key: Mention, response: Mention) -> float:
    if key.head is None or key.head != response.head:
        return 0.0
    k, s = set(key.units), set(response.units)
    return 1.0 + len(k & s) / len(k | s)


def _overlap_scorer(threshold: float) -> Callable[[Mention, Mention], float]:
    def score(key: Mention, response: Mention) -> float:
        common = key.overlap(response)
        if common == 0 or common < threshold * min(key.length, response.length) - 1e-9:
            return 0.0
        return common / (key.length + response.length - common)  # IoU

    return score


def _dependency_fit(key: Mention, response: Mention) -> float:
    """10 x F1 of the labelled dependencies + F1 of the parents alone, for two zeros of one sentence."""
    if not key.deps or not response.deps:
        return 0.0
    key_sentences = {parent.split(":", 1)[0] for parent, _ in key.deps}
    if not key_sentences & {parent.split(":", 1)[0] for parent, _ in response.deps}:
        return 0.0

    def f1(a: set[object], b: set[object]) -> float:
        return 2 * len(a & b) / (len(a) + len(b)) if a or b else 0.0

    labelled = f1(set(key.deps), set(response.deps))
    parents = f1({p for p, _ in key.deps}, {p for p, _ in response.deps})
    return 10 * labelled + parents


def align_zeros_by_dependencies(
    key: Sequence[Mention], response: Sequence[Mention]
) -> dict[Mention, Mention]:
    """Zeros paired by their enhanced dependencies before any other matching (the CorefUD scorer's
    ``dependent`` method): within a sentence, the assignment maximising the dependency fit."""
    keys = sorted(m for m in set(key) if m.zero and m.deps)
    responses = sorted(m for m in set(response) if m.zero and m.deps)
    weights = [[_dependency_fit(k, r) for r in responses] for k in keys]
    if not keys or not responses:
        return {}
    return {responses[j]: keys[i] for i, j in max_weight_assignment(weights) if weights[i][j] > 0}


def align_mentions(
    key: Sequence[Mention],
    response: Sequence[Mention],
    match: str = "exact",
    threshold: float = 0.8,
    preset: dict[Mention, Mention] | None = None,
) -> dict[Mention, Mention]:
    """Response mention -> the key mention it stands for (unaligned mentions are absent).

    ``preset`` pairs (response -> key) are kept as they are and their mentions take no other part.

    Raises:
        TabverifyError: an unknown mode, or a threshold outside (0, 1].
    """
    if match not in MATCH_MODES:
        raise TabverifyError(f"unknown matching {match!r}; use one of {', '.join(MATCH_MODES)}")
    if not 0 < threshold <= 1:
        raise TabverifyError(f"threshold {threshold} must be in (0, 1]")
    aligned: dict[Mention, Mention] = dict(preset or {})
    taken = set(aligned.values())
    key_set = {m for m in key if m not in taken}
    by_identity = {(m, m.head): m for m in key_set}
    for m in response:
        if m in aligned:
            continue
        # identical mentions first; under head matching they must also share their head
        twin = by_identity.get((m, m.head)) if match == "head" else (m if m in key_set else None)
        if twin is not None and twin not in taken:
            aligned[m] = twin
            taken.add(twin)
    if match == "exact":
        return aligned
    keys = sorted(m for m in key_set if m not in taken)
    responses = sorted(m for m in set(response) if m not in aligned)
    if not keys or not responses:
        return aligned
    scorer = {"partial": _partial, "head": _head}.get(match) or _overlap_scorer(threshold)
    # only pairs that share a character can score: bucket by character to avoid n x m comparisons
    by_char: dict[int, list[int]] = defaultdict(list)
    for j, m in enumerate(responses):
        for unit in m.units:
            for c in range(unit.start, unit.end):
                by_char[c].append(j)
    weights: dict[tuple[int, int], float] = {}
    for i, k in enumerate(keys):
        near = {j for unit in k.units for c in range(unit.start, unit.end) for j in by_char.get(c, ())}
        for j in near:
            w = scorer(k, responses[j])
            if w > 0:
                weights[(i, j)] = w
    for i, j in sparse_max_weight_assignment(weights):
        aligned[responses[j]] = keys[i]
    return aligned
