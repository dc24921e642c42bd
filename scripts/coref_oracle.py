"""Where the resolver loses: mention detection against linking, on the held-out tenth of KibutzR train.

    python scripts/coref_oracle.py --data ../shared/datasets/coref/hebrew/kibutzr

The mention detector is trained as ``tabverify train coref`` trains it (on nine tenths of train,
every tenth document held out; dev is not read). For each detector threshold the script prints, on
the held-out documents: how many gold mentions of multi-mention entities are found exactly, how many
are overlapped by a detected span (0.8 of the shorter span, the benchmark's protocol), and the
CoNLL-F1 of ORACLE links over the detected spans: each gold mention takes the detected span that
matches it exactly, else the one of highest overlap (one to one, in text order), and the spans of one
gold entity are linked. What the oracle loses is detection's share of the loss; what the real
linker loses beyond it is linking's. Takes about 2 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from tabverify.bench.coref import MENTION_BITS, _mention_data, _morpheme_document
from tabverify.coref.resolver.data import MorphDocument, MorphRange, read_document, split_files
from tabverify.coref.resolver.mentions import candidates, detect
from tabverify.coref.resolver.model import LinearModel, fit
from tabverify.coref.score import score
from tabverify.errors import TabverifyError

THRESHOLDS = (-13.0, -10.0, -8.0, -6.0, -4.0, -2.0)


def _overlaps(a: MorphRange, b: MorphRange) -> bool:
    inter = min(a[1], b[1]) - max(a[0], b[0]) + 1
    return inter >= 0.8 * min(a[1] - a[0] + 1, b[1] - b[0] + 1)


def _iou(a: MorphRange, b: MorphRange) -> float:
    inter = min(a[1], b[1]) - max(a[0], b[0]) + 1
    return inter / (max(a[1], b[1]) - min(a[0], b[0]) + 1)


def measure(detector: LinearModel, held: list[MorphDocument]) -> dict[str, float]:
    """Detection recall and the oracle-link CoNLL-F1 of ``detector`` on ``held``."""
    gold_total = exact = overlapped = candidate = found = 0
    keys, responses = [], []
    for doc in held:
        spans = detect(doc.tokens, detector)
        found += len(spans)
        pool = set(candidates(doc.tokens))
        used: set[MorphRange] = set()
        clusters = []
        for entity in doc.clusters:
            if len(entity) < 2:
                continue
            linked = []
            for mention in entity:
                gold_total += 1
                exact += mention in spans
                candidate += mention in pool
                options = [s for s in spans if _overlaps(mention, s)]
                overlapped += bool(options)
                free = [s for s in options if s not in used]
                if free:
                    best = max(free, key=lambda s: (s == mention, _iou(mention, s)))
                    used.add(best)
                    linked.append(best)
            if len(linked) > 1:
                clusters.append(linked)
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
    print(json.dumps({"held_out_documents": len(held), "by_detector_threshold": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
