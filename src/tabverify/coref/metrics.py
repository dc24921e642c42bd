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

An id may sit in more than one cluster (a mention listed twice; see
:mod:`tabverify.coref.duplicates`). Then, as in both reference scorers, a mention is looked up in
the LAST cluster that lists it, every copy counts in the sizes, and CEAF counts a copy as shared
with every cluster that lists it. Where the two scorers count such copies differently, the
``convention`` argument chooses: ``conll`` follows the CoNLL reference scorer (Perl v8.01: MUC's
correct links counted on the response side for both recall and precision, B3 as its loop over
response mentions, BLANC over sets of links), anything else follows the CorefUD scorer (v1.2). On
clusters without repeats both are the textbook definitions and agree.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from tabverify.coref.align import candidate_pairs
from tabverify.coref.assignment import max_weight_matching
from tabverify.coref.document import Mention, text_order
from tabverify.coref.duplicates import last_listing
from tabverify.errors import TabverifyError

Cluster = Sequence[Hashable]
Clusters = Sequence[Cluster]

MAX_REPEAT_WORK = 5_000_000
"""Pairs the CoNLL BLANC may list to count links of mentions in several key entities."""


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


def _every(clusters: Clusters) -> dict[Hashable, list[int]]:
    """Each id's clusters: every one that lists it, once each, in order."""
    where: dict[Hashable, list[int]] = {}
    for i, cluster in enumerate(clusters):
        for m in dict.fromkeys(cluster):
            where.setdefault(m, []).append(i)
    return where


def _pairs(n: int) -> int:
    return n * (n - 1) // 2


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


def muc(key: Clusters, response: Clusters, convention: str = "corefud") -> Counts:
    """MUC counts (``conll``: the correct links are counted on the response side, for both)."""
    rn, rd = _muc_side(key, last_listing(response))
    pn, pd = _muc_side(response, last_listing(key))
    return Counts(pn if convention == "conll" else rn, rd, pn, pd)


def _b_cubed_side(clusters: Clusters, other_clusters: Clusters) -> tuple[float, float]:
    other = last_listing(other_clusters)
    num = den = 0.0
    for cluster in clusters:
        counts = Counter(other[m] for m in cluster if m in other)
        num += sum(c * c for c in counts.values()) / len(cluster) if cluster else 0.0
        den += len(cluster)
    return num, den


def b_cubed(key: Clusters, response: Clusters, convention: str = "corefud") -> Counts:
    """B-cubed counts (``conll``: the CoNLL reference scorer's loop over response mentions)."""
    if convention == "conll":
        return _b_cubed_conll(key, response)
    rn, rd = _b_cubed_side(key, response)
    pn, pd = _b_cubed_side(response, key)
    return Counts(rn, rd, pn, pd)


def _b_cubed_conll(key: Clusters, response: Clusters) -> Counts:
    """The reference scorer's B3: for each response mention m in R with key entity K (the last one
    listing m), c = |{r in R listed in K}|; precision adds c/|R|, recall adds c/|K|."""
    last, every = last_listing(key), _every(key)
    rn = pn = 0.0
    for cluster in response:
        listed_in = Counter(k for m in cluster for k in every.get(m, ()))
        for m in cluster:
            if m in last:
                common = listed_in[last[m]]
                pn += common / len(cluster)
                rn += common / len(key[last[m]])
    return Counts(rn, sum(len(c) for c in key), pn, sum(len(c) for c in response))


def _ceaf(key: Clusters, response: Clusters, entity_based: bool) -> Counts:
    where = _every(response)
    weights: dict[tuple[int, int], float] = {}
    for i, cluster in enumerate(key):
        common = Counter(j for m in cluster for j in where.get(m, ()))  # every copy in K found in R
        for j, n in common.items():
            weights[(i, j)] = 2 * n / (len(cluster) + len(response[j])) if entity_based else float(n)
    matching = max_weight_matching(weights)
    if not matching.exact:
        raise TabverifyError(
            f"CEAF: aligning {len(key)} key and {len(response)} response entities ran out of its work "
            "budget; the entities are too entangled to score exactly"
        )
    similarity = sum(weights[pair] for pair in matching.pairs)
    if entity_based:
        return Counts(similarity, len(key), similarity, len(response))
    return Counts(similarity, sum(len(c) for c in key), similarity, sum(len(c) for c in response))


def ceafm(key: Clusters, response: Clusters, convention: str = "corefud") -> Counts:
    """CEAF with the mention-based similarity phi3 (divided by mention counts)."""
    return _ceaf(key, response, entity_based=False)


def ceafe(key: Clusters, response: Clusters, convention: str = "corefud") -> Counts:
    """CEAF with the entity-based similarity phi4 (divided by entity counts)."""
    return _ceaf(key, response, entity_based=True)


def _lea_side(clusters: Clusters, other_clusters: Clusters) -> tuple[float, float]:
    other = last_listing(other_clusters)
    num = den = 0.0
    for cluster in clusters:
        size = len(cluster)
        if size == 0:
            continue
        if size == 1:
            m = cluster[0]
            num += 1.0 if m in other and len(other_clusters[other[m]]) == 1 else 0.0
        else:
            counts = Counter(other[m] for m in cluster if m in other)
            common = sum(c * (c - 1) / 2 for c in counts.values())
            num += size * common / (size * (size - 1) / 2)
        den += size
    return num, den


def lea(key: Clusters, response: Clusters, convention: str = "corefud") -> Counts:
    """LEA counts (importance = entity size; singletons resolved when alone in both)."""
    rn, rd = _lea_side(key, response)
    pn, pd = _lea_side(response, key)
    return Counts(rn, rd, pn, pd)


def blanc(key: Clusters, response: Clusters, convention: str = "corefud") -> tuple[Counts, Counts]:
    """BLANC counts: (coreference links, non-coreference links), each side's links taken among its
    own mentions (Luo et al. 2014), so twinless mentions need no rewriting of the input.

    The CorefUD scorer counts links between mention copies (a copy in key entity K and one in K'
    make a non-coreference link unless both are found in one response entity); the CoNLL reference
    scorer (``conll``) counts sets of links between ids. Both are computed from entity overlaps,
    not by listing links, so they are linear in the mentions.
    """
    if convention == "conll":
        return _blanc_conll(key, response)
    response_of = last_listing(response)
    found: Counter[tuple[int, int]] = Counter()  # (key entity, response entity) -> copies
    for i, cluster in enumerate(key):
        for m in cluster:
            if m in response_of:
                found[(i, response_of[m])] += 1
    per_key: Counter[int] = Counter()
    per_response: Counter[int] = Counter()
    for (i, j), n in found.items():
        per_key[i] += n
        per_response[j] += n
    both = sum(_pairs(n) for n in found.values())
    key_links = sum(_pairs(len(c)) for c in key)
    response_links = sum(_pairs(len(c)) for c in response)
    key_non = _pairs(sum(len(c) for c in key)) - key_links
    response_non = _pairs(sum(len(c) for c in response)) - response_links
    both_non = (
        _pairs(sum(found.values())) - sum(_pairs(n) for n in per_key.values())
        - sum(_pairs(n) for n in per_response.values()) + both
    )  # fmt: skip
    return Counts(both, key_links, both, response_links), Counts(both_non, key_non, both_non, response_non)


def _link_sets(
    clusters: Clusters, what: str
) -> tuple[int, int, dict[Hashable, int], set[frozenset[Hashable]]]:
    """The sizes of the CoNLL reference scorer's sets of coreference and non-coreference links
    among the ids of one side, the ids listed in a single cluster (-> that cluster), and the
    listed pairs {a, b} (a != b) sharing a cluster where a is in several clusters.

    A link {a, b} is a coreference link when a and b share a cluster (a = b when a is listed twice
    in one), a non-coreference link when they sit in two different clusters (a = b when a is in
    two). Pairs of ids that are each in one cluster are counted in closed form; pairs involving an
    id in several clusters are listed (bounded by :data:`MAX_REPEAT_WORK`).
    """
    every = _every(clusters)
    single = {m: e[0] for m, e in every.items() if len(e) == 1}
    several = [m for m, e in every.items() if len(e) > 1]
    if sum(len(clusters[e]) for m in several for e in every[m]) > MAX_REPEAT_WORK:
        raise TabverifyError(
            f"BLANC: {len(several)} {what} mentions are listed in several entities, too many to count links "
            "as the CoNLL reference scorer does; list each mention in one entity"
        )
    shared: set[frozenset[Hashable]] = set()
    for m in several:
        for e in every[m]:
            shared.update(frozenset((m, x)) for x in clusters[e] if x != m)
    repeated = len({m for c in clusters for m, n in Counter(c).items() if n > 1})  # {a, a} links
    by_cluster = Counter(single.values())
    coreference = sum(_pairs(n) for n in by_cluster.values()) + len(shared) + repeated
    non_coreference = _pairs(len(every)) - sum(_pairs(n) for n in by_cluster.values()) + len(several)
    return coreference, non_coreference, single, shared


def _blanc_conll(key: Clusters, response: Clusters) -> tuple[Counts, Counts]:
    """The CoNLL reference scorer's BLANC: sets of id pairs (see :func:`_link_sets`). An id both
    sides hold is listed once by the response (:func:`tabverify.coref.duplicates.conll_response`),
    which keeps the links both sides share in closed form."""
    key_coref, key_non, single, shared = _link_sets(key, "key")
    response_coref, response_non, _, _ = _link_sets(response, "response")
    response_of = last_listing(response)

    def together(pair: frozenset[Hashable]) -> bool:
        a, b = pair
        return a in response_of and b in response_of and response_of[a] == response_of[b]

    both_coref = sum(
        _pairs(n)
        for n in Counter((e, response_of[m]) for m, e in single.items() if m in response_of).values()
    ) + sum(1 for pair in shared if together(pair))
    common = [m for m in _every(key) if m in response_of]
    alone = Counter(single[m] for m in common if m in single)  # common ids in one key entity only
    alone_by_response = Counter((single[m], response_of[m]) for m in common if m in single)
    both_non = (
        _pairs(len(common)) - sum(_pairs(n) for n in Counter(response_of[m] for m in common).values())
        - sum(_pairs(n) for n in alone.values()) + sum(_pairs(n) for n in alone_by_response.values())
    )  # fmt: skip
    return (
        Counts(both_coref, key_coref, both_coref, response_coref),
        Counts(both_non, key_non, both_non, response_non),
    )


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


def mention_overlap(
    key: Sequence[Mention], response: Sequence[Mention], words: bool = True, notes: list[str] | None = None
) -> Counts:
    """The mention overlap ratio (MOR, CRAC 2022): key and response mentions paired one-to-one to
    maximise the shared size (only overlapping mentions share anything, so the pairing stays
    sparse); shared size over key size (recall) and over response size (precision). Size counts
    words for token documents, else characters. ``notes`` receives a line when the candidate
    bounds of :func:`tabverify.coref.align.candidate_pairs` cut the search."""

    def size(m: Mention) -> int:
        return len(m.units) if words else m.length

    def shared(a: Mention, b: Mention) -> float:
        return float(len(set(a.units) & set(b.units)) if words else a.overlap(b))

    keys, responses = sorted(set(key), key=text_order), sorted(set(response), key=text_order)
    weights, cut = candidate_pairs(keys, responses, shared)
    matching = max_weight_matching(weights)
    if notes is not None and (cut or not matching.exact):
        notes.append(
            f"mention overlap ratio: {cut} mention(s) overlapped more mentions than are examined; "
            "the ratio pairs the nearest ones"
        )
    common = sum(weights[pair] for pair in matching.pairs)
    return Counts(common, sum(size(m) for m in keys), common, sum(size(m) for m in responses))


METRICS = {"muc": muc, "b_cubed": b_cubed, "ceafm": ceafm, "ceafe": ceafe, "lea": lea}
