"""Speed of coreference scoring on the IAHLT val file: against itself and against a perturbed copy.

Then 20,000 mutually overlapping mentions (hostile input) are aligned once under ``overlap``.

The perturbed copy (seeded) moves a boundary of 10% of the mentions by 1-3 characters, drops 5%,
adds 5% spurious one-word mentions and moves 5% of the mentions to another entity, so the overlap
alignment has real work to do. Each case is timed 5 times in this process (one core); the median
is reported, reading and perturbing excluded.

    python scripts/bench_coref_speed.py --data ../shared/datasets/coref
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import statistics
import time
from pathlib import Path

from tabverify.coref import Document, Mention, read_documents, score


def perturb(documents: list[Document], seed: int = 0) -> list[Document]:
    """A system-like copy of the documents (see the module docstring)."""
    rng = random.Random(seed)
    result = []
    for doc in documents:
        listed: set[Mention] = set()  # a mention listed in two entities is perturbed once, in the first
        entities = [[m for m in e if not (m in listed or listed.add(m))] for e in doc.entities]  # type: ignore[func-returns-value]
        entities = [e for e in entities if e]
        for entity in entities:
            for i, m in enumerate(entity):
                roll = rng.random()
                if roll < 0.10:
                    shift = rng.choice((-3, -2, -1, 1, 2, 3))
                    start, end = (m.start + shift, m.end) if rng.random() < 0.5 else (m.start, m.end + shift)
                    if 0 <= start < end <= len(doc.text):
                        entity[i] = Mention.of(start, end)
                elif roll < 0.15:
                    entity[i] = None  # type: ignore[call-overload]
        entities = [[m for m in e if m is not None] for e in entities]
        for entity in entities:
            if len(entities) > 1 and entity and rng.random() < 0.05:
                entities[rng.randrange(len(entities))].append(entity.pop())
        for _ in range(max(1, len(doc.mentions) // 20)):
            start = rng.randrange(0, max(1, len(doc.text) - 5))
            entities.append([Mention.of(start, start + rng.randint(2, 5))])
        seen: set[Mention] = set()
        clean = []
        for entity in entities:
            kept = [m for m in entity if not (m in seen or seen.add(m))]  # type: ignore[func-returns-value]
            if kept:
                clean.append(tuple(kept))
        result.append(Document(doc.doc_id, doc.text, tuple(clean)))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="the coref folder of ../shared/datasets")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    key = read_documents(args.data / "hebrew" / "iahlt" / "train_val_test" / "coref-5-heb_val.jsonl")
    system = perturb(key)
    n_mentions = sum(len(d.mentions) for d in key)
    report = {"documents": len(key), "mentions": n_mentions}
    for name, response in (("self", key), ("perturbed", system)):
        for match in ("exact", "overlap"):
            times = []
            for _ in range(args.repeat):
                started = time.perf_counter()
                result = score(key, response, match=match)
                times.append(time.perf_counter() - started)
            report[f"{name}_{match}_seconds_median"] = round(statistics.median(times), 3)
            report[f"{name}_{match}_conll_f1"] = round(result.conll_f1, 4)
    # hostile: 20,000 mutually overlapping mentions (every key mention holds character 0, every
    # response mention character 1); the alignment's bounds keep it sparse (see tabverify.coref.align)
    n = 20_000
    text = "x" * (n + 10)
    crowd_key = Document("crowd", text, tuple((Mention.of(0, i + 1),) for i in range(n)))
    crowd_response = Document("crowd", text, tuple((Mention.of(1, i + 2),) for i in range(n)))
    started = time.perf_counter()
    score([crowd_key], [crowd_response], match="overlap")
    report["overlapping_20000_overlap_seconds"] = round(time.perf_counter() - started, 3)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
