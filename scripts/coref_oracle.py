"""Where the resolver loses: mention detection against linking, on the held-out tenth of KibutzR train.

    python scripts/coref_oracle.py --data ../shared/datasets/coref/hebrew/kibutzr

The mention detector is trained as ``tabverify train coref`` trains it (on nine tenths of train,
every tenth document held out; dev is not read). For each detector threshold the script prints, on
the held-out documents: how many gold mentions of multi-mention entities are found exactly, how many
are overlapped by a detected span (0.8 of the shorter span, the benchmark's protocol), and the
CoNLL-F1 of ORACLE links over the detected spans: each gold mention takes the detected span that
matches it exactly, else the one of highest overlap (one to one, in text order), and the spans of one
gold entity are linked. What the oracle loses is detection's share of the loss; what the real
linker loses beyond it is linking's.

With ``--linker`` it also trains the linker as ``tabverify train coref`` does (on the same nine
tenths, its thresholds chosen on the held-out tenth, detector at -10) and scores partial oracles over
the detected spans, each fixing one decision of the real linker and keeping the others:
``spans``: spans not aligned to a gold mention of a multi-mention entity are removed before linking;
``anaphoricity``: a span links (to the linker's best-scoring antecedent) exactly when an earlier span
is aligned to its gold entity; ``antecedents``: only pairs of one gold entity may link, thresholds
kept. Without ``--linker`` it takes about 30 s; with it about 3 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

import numpy as np

from tabverify.bench.coref import (
    MENTION_BITS,
    _choose_link_thresholds,
    _choose_mention_threshold,
    _fit_links,
    _jackknife_mentions,
    _mention_data,
    _morpheme_document,
)
from tabverify.coref.resolver.data import MorphDocument, MorphRange, read_document, split_files
from tabverify.coref.resolver.links import decode, score_pairs
from tabverify.coref.resolver.mentions import candidates, detect
from tabverify.coref.resolver.model import LinearModel, fit
from tabverify.coref.resolver.pipeline import Models
from tabverify.coref.score import score
from tabverify.errors import TabverifyError

THRESHOLDS = (-13.0, -10.0, -8.0, -6.0, -4.0, -2.0)
SHIPPED_DETECTOR = -10.0
ORACLES = ("none", "spans", "anaphoricity", "antecedents")


def _overlaps(a: MorphRange, b: MorphRange) -> bool:
    inter = min(a[1], b[1]) - max(a[0], b[0]) + 1
    return inter >= 0.8 * min(a[1] - a[0] + 1, b[1] - b[0] + 1)


def _iou(a: MorphRange, b: MorphRange) -> float:
    inter = min(a[1], b[1]) - max(a[0], b[0]) + 1
    return inter / (max(a[1], b[1]) - min(a[0], b[0]) + 1)


def _align(doc: MorphDocument, spans: list[MorphRange]) -> dict[MorphRange, int]:
    """Detected spans aligned to the gold mentions of multi-mention entities (the key drops
    singletons before aligning): span -> gold entity; one to one, the exact span first, else the
    highest overlap, gold mentions in entity order."""
    aligned: dict[MorphRange, int] = {}
    for number, entity in enumerate(doc.clusters):
        if len(entity) < 2:
            continue
        for mention in entity:
            free = [s for s in spans if s not in aligned and _overlaps(mention, s)]
            if free:
                best = max(free, key=lambda s: (s == mention, _iou(mention, s)))
                aligned[best] = number
    return aligned


def linker_oracles(models: Models, held: list[MorphDocument]) -> dict[str, float]:
    """CoNLL-F1 of the real linker and of each partial oracle (see the module docstring)."""
    keys = [_morpheme_document(doc, doc.clusters) for doc in held]
    result = {}
    for oracle in ORACLES:
        responses = []
        for doc in held:
            spans = sorted(detect(doc.tokens, models.mentions))
            aligned = _align(doc, spans)
            if oracle == "spans":
                spans = [s for s in spans if s in aligned]
            infos, pairs, scores = score_pairs(doc.tokens, spans, models.links)
            entity = [aligned.get(info.span, -1 - k) for k, info in enumerate(infos)]
            if oracle == "anaphoricity":  # a sure link for an anaphoric span, none for the others
                seen: set[int] = set()
                anaphoric = []
                for e in entity:
                    anaphoric.append(e in seen)
                    seen.add(e)
                scores = scores + np.array([1e9 if anaphoric[i] else -1e9 for _, i in pairs])
            elif oracle == "antecedents":
                keep = [k for k, (j, i) in enumerate(pairs) if entity[j] == entity[i]]
                pairs, scores = [pairs[k] for k in keep], scores[keep]
            responses.append(_morpheme_document(doc, decode(infos, pairs, scores, models.links.thresholds)))
        conll = score(keys, responses, match="overlap", keep_singletons=False).conll_f1
        result[oracle] = round(conll * 100, 2)
    return result


def measure(detector: LinearModel, held: list[MorphDocument]) -> dict[str, float]:
    """Detection recall and the oracle-link CoNLL-F1 of ``detector`` on ``held``."""
    gold_total = exact = overlapped = candidate = found = 0
    keys, responses = [], []
    for doc in held:
        spans = detect(doc.tokens, detector)
        found += len(spans)
        pool = set(candidates(doc.tokens))
        for entity in doc.clusters:
            if len(entity) > 1:
                gold_total += len(entity)
                exact += sum(m in spans for m in entity)
                candidate += sum(m in pool for m in entity)
                overlapped += sum(any(_overlaps(m, s) for s in spans) for m in entity)
        groups: dict[int, list[MorphRange]] = {}
        for span, number in _align(doc, spans).items():
            groups.setdefault(number, []).append(span)
        clusters = [sorted(g) for g in groups.values() if len(g) > 1]
        keys.append(_morpheme_document(doc, doc.clusters))
        responses.append(_morpheme_document(doc, clusters))
    result = score(keys, responses, match="overlap", keep_singletons=False)
    return {
        "detected_spans": found,
        "gold_mentions": gold_total,
        "exact_recall": round(exact / gold_total, 3),
        "overlap_recall": round(overlapped / gold_total, 3),
        "candidate_recall": round(candidate / gold_total, 3),
        "oracle_link_conll_f1": round(result.conll_f1 * 100, 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, type=Path, help="the KibutzR release folder (holding data/)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--linker", action="store_true", help="also train the linker and score partial oracles"
    )
    args = parser.parse_args()
    logging.getLogger("tabverify").setLevel(logging.ERROR)  # the scorer's per-document notes
    try:
        docs = [read_document(path) for path in split_files(args.data, "train")]
    except TabverifyError as exc:
        print(f"{args.data}: {exc}", file=sys.stderr)
        return 2
    held = [d for i, d in enumerate(docs) if i % 10 == 9]
    kept = [d for i, d in enumerate(docs) if i % 10 != 9]
    model = fit(*_mention_data(kept), MENTION_BITS, args.seed)
    rows = {str(t): measure(model.with_thresholds(t), held) for t in THRESHOLDS}
    out: dict[str, object] = {"held_out_documents": len(held), "by_detector_threshold": rows}
    if args.linker:
        found = _jackknife_mentions(kept, _choose_mention_threshold(model, held), args.seed)
        links = _fit_links(kept, found, args.seed)
        detector = model.with_thresholds(SHIPPED_DETECTOR)
        nominal, pronoun, _ = _choose_link_thresholds(Models(detector, links), held)
        models = Models(detector, links.with_thresholds(nominal, pronoun))
        out["linker"] = {"thresholds": [nominal, pronoun], "conll_f1": linker_oracles(models, held)}
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
