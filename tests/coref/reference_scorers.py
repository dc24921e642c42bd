"""Brute-force test oracles: the counting of the two reference scorers, transcribed literally (loops
over mentions, explicit sets of links, CEAF by trying every assignment), for tiny documents.

- :func:`perl` follows the CoNLL reference scorer v8.01 (lib/CorScorer.pm): IdentifMentions (key
  spans get ids, the last copy's id winning; a response span that is a key span is kept once, a
  repeated span that is not a key span keeps every copy), then MUCScorer, BCUBED, CEAF and
  BLANC_Internal.
- :func:`corefud` follows the CorefUD scorer v1.2 (scorer/corefud/reader.py and
  scorer/eval/evaluator.py) for exact matching: copies inside one entity dropped, the last entity
  wins in the mention -> entity maps, then muc, b_cubed, ceafm, ceafe, lea, blancc and blancn.

They are slow on purpose and share no code with ``tabverify.coref.metrics``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Sequence

Entities = Sequence[Sequence[Hashable]]
PRF = tuple[float, float, float]  # recall, precision, F1


def _ratio(num: float, den: float) -> float:
    return num / den if den else 0.0


def _prf(rn: float, rd: float, pn: float, pd: float) -> PRF:
    r, p = _ratio(rn, rd), _ratio(pn, pd)
    return r, p, (2 * p * r / (p + r) if p + r else 0.0)


def _best_assignment(rows: int, columns: int, sim: Callable[[int, int], float]) -> float:
    """The largest summed similarity of a one-to-one assignment, by trying every one."""
    if rows == 0 or columns == 0:
        return 0.0
    best = 0.0
    if rows <= columns:
        for chosen in itertools.permutations(range(columns), rows):
            best = max(best, sum(sim(i, j) for i, j in enumerate(chosen)))
    else:
        for chosen in itertools.permutations(range(rows), columns):
            best = max(best, sum(sim(i, j) for j, i in enumerate(chosen)))
    return best


def _last(chains: Sequence[Sequence[Hashable]]) -> dict[Hashable, int]:
    index: dict[Hashable, int] = {}
    for i, chain in enumerate(chains):
        for m in chain:
            index[m] = i
    return index


def perl(key: Entities, response: Entities) -> dict[str, PRF]:
    """The CoNLL reference scorer's scores for one document (exact matching)."""
    ids: dict[Hashable, int] = {}
    count = 0
    for entity in key:
        for m in entity:
            ids[m] = count  # "Repeated mention in the key": the last copy's id wins
            count += 1
    mapping: dict[Hashable, int] = {}
    assigned: set[int] = set()
    kept_response = []
    for entity in response:
        kept = []
        for m in entity:
            if m in mapping:
                continue  # "Repeated mention in the response": removed (only key spans are mapped yet)
            if m in ids and ids[m] not in assigned:
                assigned.add(ids[m])
                mapping[m] = ids[m]
            kept.append(m)
        if kept:
            kept_response.append(kept)
    for entity in kept_response:
        for m in entity:
            if m not in mapping:
                mapping[m] = count
                count += 1
    k_chains = [[ids[m] for m in e] for e in key]
    r_chains = [[mapping[m] for m in e] for e in kept_response]
    k_index = _last(k_chains)

    correct = 0  # MUCScorer
    for chain in r_chains:
        for i in range(len(chain)):
            for j in range(i + 1, len(chain)):
                if chain[i] in k_index and chain[j] in k_index and k_index[chain[i]] == k_index[chain[j]]:
                    correct += 1
                    break
    key_links = sum(len(c) - 1 for c in k_chains if c)
    response_links = sum(len(c) - 1 for c in r_chains if c)
    scores = {"muc": _prf(correct, key_links, correct, response_links)}

    acc_p = acc_r = 0.0  # BCUBED
    for chain in r_chains:
        for m in chain:
            k_chain = k_chains[k_index[m]] if m in k_index else []
            common = sum(1 for mr in chain if mr in k_chain)
            acc_p += common / len(chain)
            acc_r += common / len(k_chain) if k_chain else 0.0
    scores["b_cubed"] = _prf(acc_r, sum(map(len, k_chains)), acc_p, sum(map(len, r_chains)))

    def intersection(a: Sequence[int], b: Sequence[int]) -> int:
        return sum(1 for x in a if x in b)

    def phi4(i: int, j: int) -> float:
        return 2 * intersection(k_chains[i], r_chains[j]) / (len(k_chains[i]) + len(r_chains[j]))

    def phi3(i: int, j: int) -> float:
        return intersection(k_chains[i], r_chains[j])

    rows, columns = len(k_chains), len(r_chains)
    e = _best_assignment(rows, columns, phi4)
    scores["ceafe"] = _prf(e, sum(1 for c in k_chains if c), e, sum(1 for c in r_chains if c))
    m = _best_assignment(rows, columns, phi3)
    scores["ceafm"] = _prf(m, sum(map(len, k_chains)), m, sum(map(len, r_chains)))

    def links(chains: list[list[int]]) -> tuple[set[tuple[int, int]], set[tuple[int, int]]]:
        coreference = {
            tuple(sorted((c[i], c[j]))) for c in chains for i, j in itertools.combinations(range(len(c)), 2)
        }
        non = {tuple(sorted((x, y))) for a, b in itertools.combinations(chains, 2) for x in a for y in b}
        return coreference, non  # type: ignore[return-value]

    kc, kn = links(k_chains)
    rc, rn = links(r_chains)
    c_recall, c_precision = _ratio(len(kc & rc), len(kc)), _ratio(len(kc & rc), len(rc))
    n_recall, n_precision = _ratio(len(kn & rn), len(kn)), _ratio(len(kn & rn), len(rn))

    def f(r: float, p: float) -> float:
        return 2 * r * p / (r + p) if r + p else 0.0

    if not kc and not kn:  # ComputeBLANCFromCounts
        scores["blanc"] = (0.0, 0.0, 0.0)
    elif not kc:
        scores["blanc"] = (n_recall, n_precision, f(n_recall, n_precision))
    elif not kn:
        scores["blanc"] = (c_recall, c_precision, f(c_recall, c_precision))
    else:
        scores["blanc"] = (
            (c_recall + n_recall) / 2,
            (c_precision + n_precision) / 2,
            (f(c_recall, c_precision) + f(n_recall, n_precision)) / 2,
        )
    return scores


def corefud(key: Entities, response: Entities) -> dict[str, PRF]:
    """The CorefUD scorer's scores for one document (exact matching, singletons and zeros kept);
    the entities are given in udapi's order."""
    key_clusters = [list(dict.fromkeys(e)) for e in key]  # transform_clusters_for_eval
    sys_clusters = [list(dict.fromkeys(e)) for e in response]
    to_key, to_sys = _last(key_clusters), _last(sys_clusters)  # get_mention_cluster_alignment

    def muc(clusters: list[list[Hashable]], to_other: dict[Hashable, int]) -> tuple[float, float]:
        tp = p = 0
        for c in clusters:
            p += len(c) - 1
            tp += len(c)
            linked = set()
            for m in c:
                if m in to_other:
                    linked.add(to_other[m])
                else:
                    tp -= 1
            tp -= len(linked)
        return tp, p

    def b_cubed(clusters: list[list[Hashable]], to_other: dict[Hashable, int]) -> tuple[float, float]:
        num = den = 0.0
        for c in clusters:
            counts: dict[int, int] = {}
            for m in c:
                if m in to_other:
                    counts[to_other[m]] = counts.get(to_other[m], 0) + 1
            num += sum(v * v for v in counts.values()) / len(c)
            den += len(c)
        return num, den

    def lea(
        clusters: list[list[Hashable]], others: list[list[Hashable]], to_other: dict[Hashable, int]
    ) -> tuple[float, float]:
        num = den = 0.0
        for c in clusters:
            if len(c) == 1:
                all_links = 1.0
                common = 1.0 if c[0] in to_other and len(others[to_other[c[0]]]) == 1 else 0.0
            else:
                all_links = len(c) * (len(c) - 1) / 2
                common = 0.0
                for i, m in enumerate(c):
                    if m in to_other:
                        common += sum(
                            1 for m2 in c[i + 1 :] if m2 in to_other and to_other[m2] == to_other[m]
                        )
            num += len(c) * common / all_links
            den += len(c)
        return num, den

    def phi3(i: int, j: int) -> float:
        return sum(1 for m in key_clusters[i] if m in sys_clusters[j])

    def phi4(i: int, j: int) -> float:
        return 2 * phi3(i, j) / (len(key_clusters[i]) + len(sys_clusters[j]))

    rn, rd = muc(key_clusters, to_sys)
    pn, pd = muc(sys_clusters, to_key)
    scores = {"muc": _prf(rn, rd, pn, pd)}
    rn, rd = b_cubed(key_clusters, to_sys)
    pn, pd = b_cubed(sys_clusters, to_key)
    scores["b_cubed"] = _prf(rn, rd, pn, pd)
    e = _best_assignment(len(key_clusters), len(sys_clusters), phi4)
    scores["ceafe"] = _prf(e, len(key_clusters), e, len(sys_clusters))
    m = _best_assignment(len(key_clusters), len(sys_clusters), phi3)
    scores["ceafm"] = _prf(m, sum(map(len, key_clusters)), m, sum(map(len, sys_clusters)))
    rn, rd = lea(key_clusters, sys_clusters, to_sys)
    pn, pd = lea(sys_clusters, key_clusters, to_key)
    scores["lea"] = _prf(rn, rd, pn, pd)

    coref = 0  # blancc
    for c in key_clusters:
        for i, m in enumerate(c):
            if m in to_sys:
                coref += sum(1 for m2 in c[i + 1 :] if m2 in to_sys and to_sys[m] == to_sys[m2])
    non = 0  # blancn
    for cid, c in enumerate(key_clusters):
        for m in c:
            if m in to_sys:
                for c2 in key_clusters[cid + 1 :]:
                    non += sum(1 for m2 in c2 if m2 in to_sys and to_sys[m] != to_sys[m2])
    n_key, n_sys = sum(map(len, key_clusters)), sum(map(len, sys_clusters))
    kc = sum(len(c) * (len(c) - 1) / 2 for c in key_clusters)
    sc = sum(len(c) * (len(c) - 1) / 2 for c in sys_clusters)
    parts = []
    for num, pd_, rd_ in ((coref, sc, kc), (non, n_sys * (n_sys - 1) / 2 - sc, n_key * (n_key - 1) / 2 - kc)):
        if pd_ == rd_ == 0:
            continue
        parts.append(_prf(num, rd_, num, pd_))
    scores["blanc"] = (
        tuple(sum(p[i] for p in parts) / len(parts) for i in range(3)) if parts else (0.0, 0.0, 0.0)
    )  # type: ignore[assignment]
    return scores
