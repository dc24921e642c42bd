"""Experiments (issue 12): what the verdict model is given, measured on train tables.

Three experiments, all on the hold-out of ``scripts/bench_verdict_holdout.py --tables 5000`` (train
tables shuffled with seed 0 as ``tabverify train tabfact`` does; the verdict model is fitted on
tables 4,000-8,000 and scored on tables 3,000-4,000, 7,148 statements). Val is never read.

``--experiment ranker-tables``: the ranker trained on 8,182 tables (the shipped ranker's first
3,000 plus tables 8,000 to the end, all outside the hold-out's 3,000-8,000) instead of 3,000, then
the verdict hold-out as ``bench_verdict_holdout.py`` runs it (logistic regression at L2 1e-4 and
the boosted trees). About 22 minutes on 2 cores.

``--experiment ranker-features``: nine more features read from the ranker's output (the top
program's probability, the best True and best False programs' probabilities and their margin, the
log number of candidates, the entropy of the ranker's distribution, the rank of the first True and
of the first False program, the True share of the top five), the shipped ranker; boosted trees
with and without them, on the hold-out above and on a second one (fitted on tables 3,000-7,000,
scored on 7,000-8,000). About 24 minutes on 2 cores.

``--experiment statement-words``: the statement's words (``word:STEM`` features, shipped since
2026-12-02) against the same features without them, on both hold-outs above. About 20 minutes.

``--experiment statement-model``: two stacked linear models as one more feature each, on both
hold-outs above. *statement*: a logistic regression over the statement alone (binary word 1-2
grams of the text, 1-3 grams of the text with its linked cells, numbers and headers replaced by
CELL / NUM / COL), trained on every train table outside the held-out tables, its score out of fold
(5 folds by table) for the fitted statements. *interaction*: the same n-grams also copied signed by
the top program's result and by the ranker's True vote, fitted on the verdict tables outside the
held-out ones, out of fold likewise. About 40 minutes (scikit-learn and scipy).

``--experiment ranker-labels``: the ranker trained on the shipped ranker's 3,000 tables as
``tabverify train tabfact`` does, on the entailed statements only (a refuted statement's weak
positives, the programs that execute to False, are mostly spurious), and with half of the refuted
statements (drawn with seed 1); the verdict model fitted on each ranker's features, on both
hold-outs, and the shipped ranker's features with the entailed-only ranker's vote and top program
added. Reports (accuracy, share of statements whose top program executes to the label). About 50
minutes.

``--experiment coverage-features``: what the coverage check (``tabverify.verify.coverage``) says of
the ranked programs as features (whether the top program covers the statement's meaning-carrying
words and the kind of each gap, the value and rank of the best covering program, the True share of
the covering programs' probability), and the second and third programs' function and value, on both
hold-outs with the shipped ranker. About 20 minutes.

    python scripts/exp_tabfact_verdict_inputs.py --data ../shared/datasets/tabfact --experiment ranker-tables
    tabverify train tabfact --data ../shared/datasets/tabfact --no-cross-fit --jobs 2 --out /tmp/ranker3000
    python scripts/exp_tabfact_verdict_inputs.py --data ../shared/datasets/tabfact --experiment statement-words \
        --ranker /tmp/ranker3000/ranker_weights.npz

The measurements below used the shipped ranker of their day, trained on those first 3,000 tables
(before 2026-12-03 on weak labels only: ``--human-weight 0`` rebuilds that one).

Measured (2026-12-02): ranker-tables: boosted 71.89% against 71.78% with the shipped ranker,
logistic regression 70.31% against 69.47%. ranker-features: 71.47% against 71.78% on the first
hold-out, 73.29% against 73.23% on the second (both before the words were shipped).
statement-words: 72.13% against 71.78% on the first hold-out, 74.40% against 73.23% on the second.
statement-model (with the words shipped): first hold-out 72.26% without, 72.97% with the statement
model, 72.34% with the interaction model; second hold-out 73.61%, 73.46%, 74.06%.
ranker-labels (accuracy / top program right), first and second hold-out: all statements 72.33% /
65.5% and 73.67% / 65.7%, entailed only 71.66% / 61.5% and 73.88% / 63.5%, half of the refuted
72.33% / 64.5% and 73.57% / 65.3%; both rankers' readings (the entailed-only ranker's vote, top
program and vote margin beside the shipped features) 72.37% and 73.83%.
coverage-features (2026-12-03, the models shipped before the coverage features): first hold-out
72.12% without, 72.86% with coverage, 72.85% with coverage and runners-up; second hold-out 73.63%,
73.97%, 73.94%. The coverage features are shipped since (``verify/decision.py``).
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from tabverify.bench import tabfact as tf
from tabverify.program.ranker import Ranker
from tabverify.program.search import Candidate, search
from tabverify.table import Table, read_tabfact_csv
from tabverify.text.linking import Linking, link
from tabverify.verify.decision import VerdictModel, statement_features

# the module, not the `verify` function that `tabverify.verify` also exports
table_verifier = importlib.import_module("tabverify.verify.table_verifier")


def with_ranker_features(
    table: Table, linking: Linking, candidates: Sequence[Candidate], probabilities: np.ndarray
) -> dict[str, float]:
    """The shipped features plus nine read from the ranker's distribution (prefixed ``x:``)."""
    f = statement_features(table, linking, candidates, probabilities)
    if not len(candidates):
        return f
    p = np.asarray(probabilities, dtype=float)
    true = np.array([bool(c.value) for c in candidates])
    best_true = float(p[true].max()) if true.any() else 0.0
    best_false = float(p[~true].max()) if (~true).any() else 0.0
    k = min(5, len(p))
    f.update(
        {
            "x:top_p": float(p[0]),
            "x:best_true_p": best_true,
            "x:best_false_p": best_false,
            "x:margin": best_true - best_false,
            "x:n_cand": math.log1p(len(candidates)),
            "x:entropy": float(-(p * np.log(p + 1e-12)).sum()),
            "x:first_true": (int(np.argmax(true)) if true.any() else 30) / 30,
            "x:first_false": (int(np.argmax(~true)) if (~true).any() else 30) / 30,
            "x:top5_vote": float((p[:k] * true[:k]).sum() / p[:k].sum()),
        }
    )
    return f


def with_runners_up(
    table: Table, linking: Linking, candidates: Sequence[Candidate], probabilities: np.ndarray
) -> dict[str, float]:
    """The shipped features (with the coverage check's ``c:`` features, shipped since this
    experiment) plus the second and third programs' function and value (``t1:``, ``t2:``)."""
    f = statement_features(table, linking, candidates, probabilities)
    for k in (1, 2):
        if len(candidates) > k:
            f[f"t{k}:{candidates[k].program.func}|{candidates[k].value}"] = 1.0
    return f


def masked(linking: Linking) -> str:
    """The statement with its linked cells, numbers and headers replaced by CELL / NUM / COL."""
    text = linking.statement
    spans = [(x.span, "CELL") for x in linking.cells]
    spans += [(x.span, "NUM") for x in linking.numbers] + [(x.span, "COL") for x in linking.headers]
    spans.sort(key=lambda s: (s[0].start, -s[0].end))
    parts, position = [], 0
    for span, kind in spans:
        if span.start >= position:
            parts += [text[position : span.start], f" {kind} "]
            position = span.end
    parts.append(text[position:])
    return " ".join("".join(parts).lower().split())


def _statement_texts(args: tuple[str, str, list[tuple[str, int]], str]) -> list[tuple[str, str]]:
    data_dir, table_id, statements, caption = args
    table = read_tabfact_csv(Path(data_dir) / "data" / "all_csv" / table_id, caption=caption)
    return [(statement.lower(), masked(link(statement, table))) for statement, _ in statements]


def statement_model_scores(
    texts: list[tuple[str, str]],
    labels: np.ndarray,
    table_of: np.ndarray,
    pool: np.ndarray,
    held: np.ndarray,
    signs: np.ndarray | None = None,
) -> np.ndarray:
    """Stacked logistic-regression scores: out of fold (5 folds by table) for ``pool``, from a model
    fitted on all of ``pool`` for ``held``. With ``signs`` (one column per sign), the n-grams are
    also copied multiplied by each sign."""
    from scipy.sparse import csr_matrix, diags, hstack
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression

    def design(fit: np.ndarray, apply: np.ndarray):
        blocks = []
        for column, ngrams in ((0, (1, 2)), (1, (1, 3))):
            vectorizer = CountVectorizer(
                ngram_range=ngrams, binary=True, min_df=2, token_pattern=r"[a-z0-9]+"
            )
            vectorizer.fit([texts[i][column] for i in fit])
            blocks.append(vectorizer.transform([texts[i][column] for i in apply]))
        x = hstack(blocks).tocsr()
        if signs is None:
            return x
        copies = [diags(signs[apply, k]) @ x for k in range(signs.shape[1])]
        return hstack([x, *copies, csr_matrix(signs[apply])]).tocsr()

    scores = np.zeros(len(labels))
    fold = table_of[pool] % 5
    for k in range(5):
        fit, out = pool[fold != k], pool[fold == k]
        model = LogisticRegression(C=1.0, max_iter=3000).fit(design(fit, fit), labels[fit])
        scores[out] = model.decision_function(design(fit, out))
    model = LogisticRegression(C=1.0, max_iter=3000).fit(design(pool, pool), labels[pool])
    scores[held] = model.decision_function(design(pool, held))
    return scores


def _statement_model(
    args: argparse.Namespace, table_ids: list[str], by_table: dict, captions: dict, progress
) -> dict:
    work = [(args.data, t, by_table[t], captions[t]) for t in table_ids]
    texts = [x for r in tf._map(_statement_texts, work, args.jobs, "statements: link", progress) for x in r]
    labels = np.array([label for t in table_ids for _, label in by_table[t]])
    table_of = np.array([i for i, t in enumerate(table_ids) for _ in by_table[t]])
    tf._TRAIN["verifier"] = table_verifier.TableVerifier(ranker=args.ranker, model=VerdictModel())
    verdict = work[3000:8000]
    rows = [
        r for rs in tf._map(tf._verdict_rows, verdict, args.jobs, "verdict: features", progress) for r in rs
    ]
    first = int(np.searchsorted(table_of, 3000))  # the verdict tables' statements, in order
    if len(rows) != int(np.searchsorted(table_of, 8000)) - first:
        raise SystemExit("a verdict table could not be read: the rows no longer line up with the statements")
    out = {}
    for name, lo in (("3000-4000", 3000), ("7000-8000", 7000)):
        in_verdict = (table_of >= 3000) & (table_of < 8000)
        held = np.where((table_of >= lo) & (table_of < lo + 1000))[0]
        fit = np.where(in_verdict & ~((table_of >= lo) & (table_of < lo + 1000)))[0]
        outside = np.where(~((table_of >= lo) & (table_of < lo + 1000)))[0]
        statement = statement_model_scores(texts, labels, table_of, outside, held)
        signs = np.zeros((len(labels), 2))
        for i, (features, _) in enumerate(rows):
            signs[first + i] = (2 * features.get("top_true", 0.5) - 1, 2 * features.get("vote", 0.5) - 1)
        interaction = statement_model_scores(texts, labels, table_of, fit, held, signs)
        for variant, extra in (("shipped", None), ("statement", statement), ("interaction", interaction)):

            def row(i: int, extra: np.ndarray | None = extra) -> dict[str, float]:
                features = dict(rows[i - first][0])
                if extra is not None:
                    features["x:stacked"] = float(extra[i])
                return features

            fitted = [(row(i), int(labels[i])) for i in fit]
            tested = [(row(i), int(labels[i])) for i in held]
            out[f"held out {name}, {variant}"] = _accuracy(fitted, tested, lambda k: True)
            progress(f"{name} {variant}", 1, 1)
    return out


_RANKERS: dict[str, Ranker] = {}


def _rows_per_ranker(args: tuple[str, str, list[tuple[str, int]], str]) -> list[tuple[dict, int]]:
    """Each statement's verdict features under every ranker of ``_RANKERS``, from one search."""
    data_dir, table_id, statements, caption = args
    table = read_tabfact_csv(Path(data_dir) / "data" / "all_csv" / table_id, caption=caption)
    out = []
    for statement, label in statements:
        linking = link(statement, table)
        candidates = search(table, linking).candidates
        per = {}
        for name, ranker in _RANKERS.items():
            if not candidates:
                per[name] = statement_features(table, linking, [], np.zeros(0))
                continue
            scores = ranker.score(linking, candidates, table)
            order = np.argsort(-scores, kind="stable")
            shifted = scores[order] - scores.max()
            p = np.exp(shifted) / np.exp(shifted).sum()
            per[name] = statement_features(table, linking, [candidates[i] for i in order], p)
        out.append((per, label))
    return out


def _ranker_labels(
    args: argparse.Namespace, table_ids: list[str], by_table: dict, captions: dict, progress
) -> dict:
    work = [(args.data, t, by_table[t], captions[t]) for t in table_ids]
    groups = [
        g for r in tf._map(tf._ranker_groups, work[:3000], args.jobs, "ranker: search", progress) for g in r
    ]
    draw = np.random.default_rng(1)
    half = [g for g in groups if g.label or draw.random() < 0.5]
    _RANKERS["all statements"] = Ranker(seed=0).fit(groups)
    _RANKERS["entailed only"] = Ranker(seed=0).fit([g for g in groups if g.label])
    _RANKERS["half of the refuted"] = Ranker(seed=0).fit(half)
    del groups, half
    rows = tf._map(_rows_per_ranker, work[3000:8000], args.jobs, "verdict: features", progress)
    out = {}
    for name, held in (("3000-4000", range(0, 1000)), ("7000-8000", range(4000, 5000))):
        for ranker in _RANKERS:
            fit = [(per[ranker], y) for i, rs in enumerate(rows) if i not in held for per, y in rs]
            test = [(per[ranker], y) for i, rs in enumerate(rows) if i in held for per, y in rs]
            top = sum(r.get("top_true", -1) == y for r, y in test) / len(test)
            out[f"held out {name}, ranker on {ranker}"] = (
                _accuracy(fit, test, lambda k: True),
                round(top, 4),
            )
            progress(f"{name} {ranker}", 1, 1)
        # both rankers' readings: the entailed-only ranker's vote and top program beside the shipped ones
        fit = [(_two_readings(per), y) for i, rs in enumerate(rows) if i not in held for per, y in rs]
        test = [(_two_readings(per), y) for i, rs in enumerate(rows) if i in held for per, y in rs]
        out[f"held out {name}, both rankers"] = _accuracy(fit, test, lambda k: True)
    return out


def _two_readings(per: dict[str, dict[str, float]]) -> dict[str, float]:
    features = dict(per["all statements"])
    second = per["entailed only"]
    for key, value in second.items():
        if key in ("vote", "top_true", "vote_max_cover") or key.startswith("top:"):
            features["x:" + key] = value
    if "vote" in features and "vote" in second:
        features["x:vote_diff"] = features["vote"] - second["vote"]
    return features


def _accuracy(fit: list, test: list, keep) -> float:
    model = VerdictModel(boosted=True, seed=0).fit(
        [{k: v for k, v in r.items() if keep(k)} for r, _ in fit], [y for _, y in fit]
    )
    right = sum(
        (model.probability({k: v for k, v in r.items() if keep(k)}) >= 0.5) == bool(y) for r, y in test
    )
    return round(right / len(test), 4)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", required=True, help="TabFact release folder")
    parser.add_argument(
        "--experiment",
        required=True,
        choices=(
            "ranker-tables",
            "ranker-features",
            "statement-words",
            "statement-model",
            "ranker-labels",
            "coverage-features",
        ),
    )
    parser.add_argument(
        "--ranker",
        metavar="NPZ",
        help="needed by ranker-features, statement-words, statement-model and coverage-features: a "
        "ranker trained on the first 3,000 train tables of the seed-0 shuffle, which these hold-outs "
        "assume: tabverify train tabfact --data DIR --no-cross-fit --out DIR (the shipped ranker, "
        "since 2026-12-04, trained on the first 6,591 and overlaps them)",
    )
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    if args.ranker is None and args.experiment not in ("ranker-tables", "ranker-labels"):
        parser.error(f"--experiment {args.experiment} reads a 3,000-table ranker: give it as --ranker NPZ")
    started = time.time()

    def progress(stage: str, done: int, total: int) -> None:
        if done % 1000 == 0 or done == total:
            print(f"{stage} {done}/{total} {time.time() - started:.0f}s", file=sys.stderr, flush=True)

    table_ids, by_table, captions = tf._shuffled_train_tables(args.data, 0)
    if args.experiment in ("statement-model", "ranker-labels"):
        run = _statement_model if args.experiment == "statement-model" else _ranker_labels
        print(json.dumps(run(args, table_ids, by_table, captions, progress), indent=2))
        return
    if args.experiment == "ranker-tables":
        work = [(args.data, t, by_table[t], captions[t]) for t in table_ids[:3000] + table_ids[8000:]]
        groups = [
            g for r in tf._map(tf._ranker_groups, work, args.jobs, "ranker: search", progress) for g in r
        ]
        with tempfile.TemporaryDirectory() as tmp:
            path = str(Path(tmp) / "ranker.npz")
            Ranker(seed=0).fit(groups).save(path)
            del groups
            result = tf.verdict_holdout(
                args.data,
                [1e-4],
                ranker_tables=3000,
                tables=5000,
                jobs=args.jobs,
                ranker_path=path,
                progress=progress,
            )
        print(json.dumps(result, indent=2))
        return
    # each variant: which feature names the verdict model is given
    if args.experiment == "ranker-features":
        table_verifier.statement_features = with_ranker_features
        variants = {  # measured before the statement's words were shipped, so without them
            "features of the time": lambda k: not k.startswith(("x:", "word:")),
            "with ranker features": lambda k: not k.startswith("word:"),
        }
    elif args.experiment == "coverage-features":
        table_verifier.statement_features = with_runners_up
        variants = {
            "without coverage": lambda k: not k.startswith(("c:", "t1:", "t2:")),
            "shipped (with coverage)": lambda k: not k.startswith(("t1:", "t2:")),
            "with coverage and runners-up": lambda k: True,
        }
    else:
        variants = {
            "without words": lambda k: not k.startswith("word:"),
            "shipped (with words)": lambda k: True,
        }
    verdict_ids = table_ids[3000:8000]
    tf._TRAIN["verifier"] = table_verifier.TableVerifier(ranker=args.ranker, model=VerdictModel())
    work = [(args.data, t, by_table[t], captions[t]) for t in verdict_ids]
    rows = tf._map(tf._verdict_rows, work, args.jobs, "verdict: features", progress)
    out = {}
    for name, held in (("3000-4000", set(verdict_ids[:1000])), ("7000-8000", set(verdict_ids[4000:]))):
        fit = [r for t, rs in zip(verdict_ids, rows, strict=True) if t not in held for r in rs]
        test = [r for t, rs in zip(verdict_ids, rows, strict=True) if t in held for r in rs]
        for variant, keep in variants.items():
            out[f"held out {name}, {variant}"] = _accuracy(fit, test, keep)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
