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
assignment (:mod:`tabverify.coref.assignment`) with zero-weight pairs dropped; mentions are taken in
text order, so ties go to the earlier start, then the earlier end.

The work is sparse and bounded. Candidate partners of a key mention are found in an index of the
response mentions by their (start, end), nearest first (an L1 distance that bounds IoU from above);
at most :data:`EXAMINE` overlapping mentions are examined per key mention and its :data:`KEEP` best
alignable partners are kept. Real annotation never comes near these bounds; when a hostile input
does (thousands of mutually overlapping mentions), the alignment is still computed, in bounded time
and memory, and a note says which bound cut the search.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Sequence

from tabverify.coref.assignment import max_weight_matching
from tabverify.coref.document import Mention, text_order
from tabverify.errors import TabverifyError

MATCH_MODES = ("exact", "partial", "head", "overlap")

EXAMINE = 256
"""Overlapping response mentions examined per key mention (nearest first)."""

MIN_EXAMINE = 8
"""Examined per key mention however many key mentions there are."""

PAIR_BUDGET = 250_000
"""Pairs examined per alignment before the per-mention share shrinks towards :data:`MIN_EXAMINE`."""

KEEP = 32
"""Alignable partners kept per key mention (best first) for the assignment."""


class NearIndex:
    """Mentions indexed by their covering span, to list those overlapping a span, nearest first.

    Nearness is |start - s| + |end - e|, which bounds IoU from above (IoU <= |k| / (|k| + distance)),
    so the best partners come first. Mentions are grouped by start; each group is sorted by end; a
    prefix maximum of ends lets the leftward walk stop where nothing further left reaches the span.
    """

    def __init__(self, mentions: Sequence[Mention]) -> None:
        groups: dict[int, list[tuple[int, int]]] = {}
        for j, m in enumerate(mentions):
            groups.setdefault(m.start, []).append((m.end, j))
        self.starts = sorted(groups)
        self.ends = [[end for end, _ in sorted(groups[s])] for s in self.starts]
        self.ids = [[j for _, j in sorted(groups[s])] for s in self.starts]
        self.reach: list[int] = []  # the largest end among groups 0..g
        for ends in self.ends:
            self.reach.append(max(ends[-1], self.reach[-1] if self.reach else 0))

    def near(self, start: int, end: int, inside: bool = False) -> Iterator[int]:
        """Indices of the mentions overlapping ``[start, end)``, nearest first; with ``inside``, only
        those lying within it."""
        heap: list[tuple[int, int, int, int]] = []  # (distance, group, position, step); step 0 opens a group

        def open_group(g: int) -> None:
            heapq.heappush(heap, (abs(self.starts[g] - start), g, 0, 0))

        first = bisect_left(self.starts, start) if inside else bisect_right(self.starts, start) - 1
        if first >= 0 and not inside and self.reach[first] > start:
            open_group(first)  # groups at or left of start, walked leftwards
        right = first if inside else first + 1
        if right < len(self.starts) and self.starts[right] < end:
            heapq.heappush(heap, (self.starts[right] - start, right, 0, 2))  # groups right of start
        while heap:
            distance, g, position, step = heapq.heappop(heap)
            ends, base = self.ends[g], abs(self.starts[g] - start)
            if step in (0, 2):  # open group g, then queue the next group in the same direction
                if step == 0 and g > 0 and self.reach[g - 1] > start:
                    open_group(g - 1)
                if step == 2 and g + 1 < len(self.starts) and self.starts[g + 1] < end:
                    heapq.heappush(heap, (self.starts[g + 1] - start, g + 1, 0, 2))
                split = bisect_left(ends, end)
                if inside:
                    split = bisect_right(ends, end)
                elif split < len(ends):
                    heapq.heappush(heap, (base + ends[split] - end, g, split, 1))
                if split > 0 and ends[split - 1] > start:
                    heapq.heappush(heap, (base + end - ends[split - 1], g, split - 1, -1))
                continue
            yield self.ids[g][position]
            following = position + step
            if 0 <= following < len(ends) and (step > 0 or ends[following] > start):
                heapq.heappush(heap, (base + abs(ends[following] - end), g, following, step))


def candidate_pairs(
    keys: Sequence[Mention],
    responses: Sequence[Mention],
    weight: Callable[[Mention, Mention], float],
    inside: bool = False,
) -> tuple[dict[tuple[int, int], float], int]:
    """``{(key index, response index): weight}`` for the positive-weight pairs among each key
    mention's nearest overlapping responses, and how many key mentions had their search cut.

    Each key mention examines at most :data:`EXAMINE` responses, fewer when there are many key
    mentions (:data:`PAIR_BUDGET` pairs in all, but never fewer than :data:`MIN_EXAMINE` each),
    and keeps its :data:`KEEP` best alignable ones.
    """
    index = NearIndex(responses)
    examine = max(MIN_EXAMINE, min(EXAMINE, PAIR_BUDGET // max(1, len(keys))))
    weights: dict[tuple[int, int], float] = {}
    cut = 0
    for i, k in enumerate(keys):
        found: list[tuple[float, int]] = []
        examined = 0
        was_cut = False
        for j in index.near(k.start, k.end, inside):
            if examined == examine:
                was_cut = True
                break
            examined += 1
            w = weight(k, responses[j])
            if w > 0:
                found.append((-w, j))
        if len(found) > KEEP:
            found.sort()
            found = found[:KEEP]
            was_cut = True
        cut += was_cut
        for w, j in found:
            weights[(i, j)] = -w
    return weights, cut


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


def _sentences(m: Mention) -> frozenset[str]:
    return frozenset(parent.split(":", 1)[0] for parent, _ in m.deps)


def align_zeros_by_dependencies(
    key: Sequence[Mention], response: Sequence[Mention], notes: list[str] | None = None
) -> dict[Mention, Mention]:
    """Zeros paired by their enhanced dependencies before any other matching (the CorefUD scorer's
    ``dependent`` method): within a sentence, the assignment maximising the dependency fit.

    Per key zero, the :data:`EXAMINE` nearest response zeros of its sentence are considered.
    """
    keys = sorted((m for m in set(key) if m.zero and m.deps), key=text_order)
    responses = sorted((m for m in set(response) if m.zero and m.deps), key=text_order)
    by_sentence: dict[str, list[int]] = {}
    for j, m in enumerate(responses):
        for sentence in _sentences(m):
            by_sentence.setdefault(sentence, []).append(j)
    starts = {sentence: [responses[j].start for j in group] for sentence, group in by_sentence.items()}
    weights: dict[tuple[int, int], float] = {}
    cut = 0
    for i, k in enumerate(keys):
        near: set[int] = set()
        for sentence in _sentences(k):
            group = by_sentence.get(sentence, [])
            first = 0
            if len(group) > EXAMINE:  # the nearest zeros of the sentence
                cut += 1
                first = min(
                    max(0, bisect_left(starts[sentence], k.start) - EXAMINE // 2), len(group) - EXAMINE
                )
            near.update(group[first : first + EXAMINE])
        for j in near:
            w = _dependency_fit(k, responses[j])
            if w > 0:
                weights[(i, j)] = w
    matching = max_weight_matching(weights)
    _note_bounds(notes, "zero", cut, matching.exact)
    return {responses[j]: keys[i] for i, j in matching.pairs}


def _note_bounds(notes: list[str] | None, what: str, cut: int, exact: bool) -> None:
    if notes is None:
        return
    if cut:
        notes.append(
            f"{cut} {what} mention(s) had more candidate partners than the alignment examines "
            f"(up to {EXAMINE}, keeping the best {KEEP}); the alignment considered the nearest ones"
        )
    if not exact:
        notes.append(
            f"the {what} alignment ran out of its work budget and matched the rest greedily (best first); "
            "scores are a lower bound"
        )


def align_mentions(
    key: Sequence[Mention],
    response: Sequence[Mention],
    match: str = "exact",
    threshold: float = 0.8,
    preset: dict[Mention, Mention] | None = None,
    notes: list[str] | None = None,
) -> dict[Mention, Mention]:
    """Response mention -> the key mention it stands for (unaligned mentions are absent).

    ``preset`` pairs (response -> key) are kept as they are and their mentions take no other part.
    ``notes``, when given, receives a line for each bound that cut the search (see the module
    documentation); there is none on real annotation.

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
    keys = sorted((m for m in key_set if m not in taken), key=text_order)
    responses = sorted((m for m in set(response) if m not in aligned), key=text_order)
    if not keys or not responses:
        return aligned
    if match == "head":  # candidates share the head word: one index per head
        weights: dict[tuple[int, int], float] = {}
        cut = 0
        by_head: dict[object, list[int]] = {}
        for j, m in enumerate(responses):
            by_head.setdefault(m.head, []).append(j)
        keys_by_head: dict[object, list[int]] = {}
        for i, k in enumerate(keys):
            if k.head is not None and k.head in by_head:
                keys_by_head.setdefault(k.head, []).append(i)
        for head, key_ids in keys_by_head.items():
            group = by_head[head]
            found, group_cut = candidate_pairs(
                [keys[i] for i in key_ids], [responses[j] for j in group], _head
            )
            weights.update({(key_ids[a], group[b]): w for (a, b), w in found.items()})
            cut += group_cut
    else:
        scorer = _partial if match == "partial" else _overlap_scorer(threshold)
        weights, cut = candidate_pairs(keys, responses, scorer, inside=match == "partial")
    matching = max_weight_matching(weights)
    _note_bounds(notes, "key", cut, matching.exact)
    for i, j in matching.pairs:
        aligned[responses[j]] = keys[i]
    return aligned
