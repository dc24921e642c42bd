"""Coreference metrics as pure functions over clusters of mention ids.

A metric takes the key clusters and the response clusters of one document, where a response mention
aligned to a key mention already carries the key mention's id, and returns :class:`Counts` (recall
and precision numerators and denominators). Counts add up over documents (micro-average); scores
are 0 when a denominator is 0. Definitions follow the CoNLL reference scorer and coval:

- MUC (Vilain et al. 1995): links; singletons do not count.
- B3 (Bagga & Baldwin 1998): per-mention overlap of the key and response entities.
- CEAF-m / CEAF-e (Luo 2005): best one-to-one entity alignment (Hungarian) with phi3 = |K∩R|
  (divided by mention counts) and phi4 = 2|K∩R| / (|K|+|R|) (divided by entity counts).
- BLANC (Recasens & Hovy 2011; Luo et al. 2014 for system mentions): coreference and
  non-coreference links, averaged; see :func:`blanc_score` for the degenerate cases.
- LEA (Moosavi & Strube 2016): link-based, entity-aware; a singleton counts as a self-link.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from tabverify.coref.assignment import max_weight_assignment, sparse_max_weight_assignment
from tabverify.coref.document import Mention

Cluster = Sequence[Hashable]
Clusters = Sequence[Cluster]


@dataclass(frozen=True, slots=True)
class Counts:
    """Numerators and denominators of recall and precision."""

    recall_num: float = 0.0
    recall_den: float = 0.0
    precision_num: float = 0.0
    precision_den: float = 0.0

    def __add__(self, other: Counts) -> Counts:
        return Counts(
            self.recall_num + other.recall_num,
            self.recall_den + other.recall_den,
            self.precision_num + other.precision_num,
            self.precision_den + other.precision_den,
        )

    @property
    def recall(self) -> float:
        """Recall (0 when nothing was to be found)."""
        return self.recall_num / self.recall_den if self.recall_den else 0.0

    @property
    def precision(self) -> float:
        """Precision (0 when nothing was predicted)."""
        return self.precision_num / self.precision_den if self.precision_den else 0.0

    @property
    def f1(self) -> float:
        """Harmonic mean of recall and precision (0 when both are 0)."""
        r, p = self.recall, self.precision
        return 2 * p * r / (p + r) if p + r else 0.0


@dataclass(frozen=True, slots=True)
class Score:
    """Recall, precision and F1 of one metric."""

    recall: float
    precision: float
    f1: float

    def to_dict(self) -> dict[str, float]:
        """``{"recall", "precision", "f1"}``."""
        return {"recall": self.recall, "precision": self.precision, "f1": self.f1}


def _index(clusters: Clusters) -> dict[Hashable, int]:
    return {m: i for i, cluster in enumerate(clusters) for m in cluster}


def _muc_side(clusters: Clusters, other: dict[Hashable, int]) -> tuple[float, float]:
    num = den = 0
    for cluster in clusters:
        if len(cluster) < 2:
            continue
        den += len(cluster) - 1
        partitions = {other[m] for m in cluster if m in other}
        unmatched = sum(1 for m in cluster if m not in other)
        num += len(cluster) - len(partitions) - unmatched
    return num, den


def muc(key: Clusters, response: Clusters) -> Counts:
    """MUC counts."""
    rn, rd = _muc_side(key, _index(response))
    pn, pd = _muc_side(response, _index(key))
    return Counts(rn, rd, pn, pd)


def _b_cubed_side(clusters: Clusters, other_clusters: Clusters) -> tuple[float, float]:
    other = _index(other_clusters)
    num = den = 0.0
    for cluster in clusters:
        counts: dict[int, int] = {}
        for m in cluster:
            if m in other:
                counts[other[m]] = counts.get(other[m], 0) + 1
        num += sum(c * c for c in counts.values()) / len(cluster) if cluster else 0.0
        den += len(cluster)
    return num, den


def b_cubed(key: Clusters, response: Clusters) -> Counts:
    """B-cubed counts."""
    rn, rd = _b_cubed_side(key, response)
    pn, pd = _b_cubed_side(response, key)
    return Counts(rn, rd, pn, pd)


def _ceaf(key: Clusters, response: Clusters, entity_based: bool) -> Counts:
    response_of = _index(response)
    weights: dict[tuple[int, int], float] = {}
    response_sizes = [len(set(c)) for c in response]
    for i, cluster in enumerate(key):
        members = set(cluster)
        common: dict[int, int] = {}
        for m in members:
            if m in response_of:
                common[response_of[m]] = common.get(response_of[m], 0) + 1
        for j, n in common.items():
            weights[(i, j)] = 2 * n / (len(members) + response_sizes[j]) if entity_based else float(n)
    similarity = sum(weights[pair] for pair in sparse_max_weight_assignment(weights))
    if entity_based:
        return Counts(similarity, len(key), similarity, len(response))
    return Counts(similarity, sum(len(c) for c in key), similarity, sum(len(c) for c in response))


def ceafm(key: Clusters, response: Clusters) -> Counts:
    """CEAF with the mention-based similarity phi3 (divided by mention counts)."""
    return _ceaf(key, response, entity_based=False)


def ceafe(key: Clusters, response: Clusters) -> Counts:
    """CEAF with the entity-based similarity phi4 (divided by entity counts)."""
    return _ceaf(key, response, entity_based=True)


def _lea_side(clusters: Clusters, other_clusters: Clusters) -> tuple[float, float]:
    other = _index(other_clusters)
    num = den = 0.0
    for cluster in clusters:
        size = len(cluster)
        if size == 0:
            continue
        if size == 1:
            m = cluster[0]
            resolved = 1.0 if m in other and len(other_clusters[other[m]]) == 1 else 0.0
            num += resolved
        else:
            counts: dict[int, int] = {}
            for m in cluster:
                if m in other:
                    counts[other[m]] = counts.get(other[m], 0) + 1
            common = sum(c * (c - 1) / 2 for c in counts.values())
            num += size * common / (size * (size - 1) / 2)
        den += size
    return num, den


def lea(key: Clusters, response: Clusters) -> Counts:
    """LEA counts (importance = entity size; singletons resolved when alone in both)."""
    rn, rd = _lea_side(key, response)
    pn, pd = _lea_side(response, key)
    return Counts(rn, rd, pn, pd)


def _pairs(n: int) -> int:
    return n * (n - 1) // 2


def blanc(key: Clusters, response: Clusters) -> tuple[Counts, Counts]:
    """BLANC counts: (coreference links, non-coreference links), each side's links taken among its
    own mentions (Luo et al. 2014), so twinless mentions need no rewriting of the input.

    Computed from entity overlaps, not by listing links, so it is linear in the mentions.
    """
    key_of, response_of = _index(key), _index(response)
    common = key_of.keys() & response_of.keys()
    overlap: dict[tuple[int, int], int] = {}
    in_key: dict[int, int] = {}
    in_response: dict[int, int] = {}
    for m in common:
        k, r = key_of[m], response_of[m]
        overlap[(k, r)] = overlap.get((k, r), 0) + 1
        in_key[k] = in_key.get(k, 0) + 1
        in_response[r] = in_response.get(r, 0) + 1
    key_links = sum(_pairs(len(set(c))) for c in key)
    response_links = sum(_pairs(len(set(c))) for c in response)
    both = sum(_pairs(n) for n in overlap.values())
    key_non = _pairs(len(key_of)) - key_links
    response_non = _pairs(len(response_of)) - response_links
    both_non = (
        _pairs(len(common)) - sum(_pairs(n) for n in in_key.values()) - sum(_pairs(n) for n in in_response.values())
        + both
    )  # fmt: skip
    return Counts(both, key_links, both, response_links), Counts(both_non, key_non, both_non, response_non)


def blanc_score(coreference: Counts, non_coreference: Counts, variant: str = "conll") -> Score:
    """Combine BLANC's two link scores.

    ``conll`` (the reference scorer): the average of both, except that a link type the key lacks
    entirely (a key of one entity has no non-coreference links; a key of singletons has no
    coreference links) is left out and the other type alone is the score.
    ``corefud`` (the UA/CorefUD scorers): a type is left out only when neither side has such links.
    """
    parts = []
    for counts in (coreference, non_coreference):
        if variant == "conll" and counts.recall_den == 0:
            continue
        if variant == "corefud" and counts.recall_den == 0 and counts.precision_den == 0:
            continue
        parts.append(counts)
    if not parts:
        return Score(0.0, 0.0, 0.0)
    n = len(parts)
    return Score(
        sum(c.recall for c in parts) / n, sum(c.precision for c in parts) / n, sum(c.f1 for c in parts) / n
    )


def mention_overlap(key: Sequence[Mention], response: Sequence[Mention], words: bool = True) -> Counts:
    """The mention overlap ratio (MOR, CRAC 2022): mentions grouped into runs of overlapping spans,
    paired within each run to maximise the shared size; shared size over key size (recall) and
    over response size (precision). Size counts words for token documents, else characters."""

    def size(m: Mention) -> int:
        return len(m.units) if words else m.length

    def shared(a: Mention, b: Mention) -> int:
        return len(set(a.units) & set(b.units)) if words else a.overlap(b)

    items = sorted([(m, True) for m in set(key)] + [(m, False) for m in set(response)], key=lambda x: x[0])
    total = Counts(0.0, sum(size(m) for m in set(key)), 0.0, sum(size(m) for m in set(response)))
    run: list[tuple[Mention, bool]] = []
    bound = -1
    for item in items + [(None, False)]:
        mention = item[0]
        if mention is not None and (not run or mention.start < bound):
            run.append(item)  # type: ignore[arg-type]
            bound = max(bound, mention.end)
            continue
        keys = [m for m, is_key in run if is_key]
        responses = [m for m, is_key in run if not is_key]
        if keys and responses:
            weights = [[float(shared(k, r)) for r in responses] for k in keys]
            common = sum(weights[i][j] for i, j in max_weight_assignment(weights))
            total = total + Counts(common, 0.0, common, 0.0)
        run, bound = ([item], mention.end) if mention is not None else ([], -1)  # type: ignore[list-item]
    return total


METRICS = {"muc": muc, "b_cubed": b_cubed, "ceafm": ceafm, "ceafe": ceafe, "lea": lea}
