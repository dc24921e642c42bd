"""TabFact: load the public release's layout, run a verifier, score accuracy; train the ranker."""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import signal
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from tabverify.errors import DatasetError, TabverifyError
from tabverify.program.ranker import Group, Ranker, make_group
from tabverify.program.search import search
from tabverify.table import Table, read_tabfact_csv
from tabverify.text.linking import link
from tabverify.verify.verdict import Label

if TYPE_CHECKING:
    from tabverify.verify.decision import FeatureRows, VerdictModel

log = logging.getLogger(__name__)

SPLITS = ("train", "val", "test", "simple_test", "complex_test", "small_test")


@dataclass(frozen=True)
class Example:
    """One statement of the benchmark."""

    table_id: str
    statement: str
    label: int  # 1 = ENTAILED, 0 = REFUTED
    caption: str


def _read_json(path: Path) -> object:
    if not path.exists():
        raise DatasetError(
            f"{path} is missing; --data must be a folder in the TabFact release layout "
            "(data/all_csv, data/*_id.json, tokenized_data/<split>_examples.json)"
        )
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}: invalid JSON ({exc.msg} at line {exc.lineno})") from exc


def _table_file_name(source: Path, table_id: object, where: str) -> str:
    """A table id as the release writes it: a plain file name in ``data/all_csv``."""
    if (
        not isinstance(table_id, str)
        or not table_id.strip()
        or table_id in (".", "..")
        or "/" in table_id
        or "\\" in table_id
        or "\0" in table_id
    ):
        raise DatasetError(f"{source}: {where} {table_id!r} is not a table file name of data/all_csv")
    return table_id


def _id_list(path: Path) -> list[str]:
    """A ``data/*_id(s).json`` file: a JSON list of table file names."""
    ids = _read_json(path)
    if not isinstance(ids, list):
        raise DatasetError(f"{path}: expected a JSON list of table ids, found {type(ids).__name__}")
    return [_table_file_name(path, table_id, f"item {i}") for i, table_id in enumerate(ids)]


def _examples_of(examples_file: Path, table_id: str, entry: object) -> list[Example]:
    """The statements of one entry ``[statements, labels, caption]`` of a ``*_examples.json``.

    Raises:
        DatasetError: the entry is not three items, the statements are not a list of texts, the
            labels not a list of 0/1 integers as long as the statements, the caption not text.
    """
    where = f"{examples_file}: entry {table_id!r}"
    if not isinstance(entry, list) or len(entry) != 3:
        raise DatasetError(f"{where} must be [statements, labels, caption]; found {str(entry)[:80]}")
    statements, labels, caption = entry
    if not isinstance(statements, list) or not all(isinstance(s, str) and s.strip() for s in statements):
        raise DatasetError(f"{where}: the statements must be a list of non-empty texts")
    if not isinstance(labels, list) or not all(type(label) is int and label in (0, 1) for label in labels):
        raise DatasetError(
            f"{where}: the labels must be a list of 0 (refuted) / 1 (entailed); found {str(labels)[:80]}"
        )
    if len(labels) != len(statements):
        raise DatasetError(f"{where}: {len(statements)} statements but {len(labels)} labels")
    if not isinstance(caption, str):
        raise DatasetError(f"{where}: the caption must be text; found {type(caption).__name__}")
    return [Example(table_id, s, label, caption) for s, label in zip(statements, labels, strict=True)]


def load_examples(data_dir: str | Path, split: str) -> list[Example]:
    """The statements of a split, in file order.

    ``simple_test``/``complex_test``/``small_test`` are the test statements of the tables listed
    in ``data/<name>_id.json``; ``val``/``train``/``test`` read ``tokenized_data/<split>_examples.json``.

    Raises:
        DatasetError: an unknown split, a missing file, invalid JSON, or JSON not in the release's
            shape ({table_id: [statements, labels, caption]} with 0/1 labels, one per statement;
            id files a list of table file names). The message names the file and the entry.
    """
    root = Path(data_dir)
    if split not in SPLITS:
        raise DatasetError(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")
    source = split if split in ("train", "val", "test") else "test"
    examples_file = root / "tokenized_data" / f"{source}_examples.json"
    examples = _read_json(examples_file)
    if not isinstance(examples, dict):
        raise DatasetError(f"{examples_file}: expected an object {{table_id: [statements, labels, caption]}}")
    keep: set[str] | None = None
    if split != source:
        keep = set(_id_list(root / "data" / f"{split}_id.json"))
    out = []
    for table_id, entry in examples.items():
        if keep is not None and table_id not in keep:
            continue
        _table_file_name(examples_file, table_id, "entry")
        out.extend(_examples_of(examples_file, table_id, entry))
    return out


def channel_table_ids(data_dir: str | Path, channel: str) -> set[str]:
    """Tables of the simple (r1) or complex (r2) collection channel.

    Raises:
        DatasetError: ``data/<channel>_ids.json`` is missing or not a list of table file names.
    """
    return set(_id_list(Path(data_dir) / "data" / f"{channel}_ids.json"))


class TableCache:
    """Reads each table file once."""

    def __init__(self, data_dir: str | Path) -> None:
        self.root = Path(data_dir) / "data" / "all_csv"
        self._tables: dict[str, Table] = {}

    def get(self, table_id: str, caption: str = "") -> Table:
        """The table with that id (file name in data/all_csv).

        Raises:
            DatasetError: the release has no such table file.
            TableError: the file cannot be read as a table.
        """
        if table_id not in self._tables:
            path = self.root / table_id
            if not path.is_file():
                raise DatasetError(
                    f"{path} is missing: the release names table {table_id!r} but has no such file"
                )
            if len(self._tables) > 256:
                self._tables.clear()
            self._tables[table_id] = read_tabfact_csv(self.root / table_id, caption=caption)
        return self._tables[table_id]


# ---- running the benchmark ------------------------------------------------------------------------

_WORKER: dict[str, object] = {}


def _quiet_worker() -> None:
    """A pool worker leaves interrupts to the parent and dies quietly when the pool is terminated
    (it would otherwise print a traceback per worker when a run is stopped)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


ENGINES = ("memory", "duckdb", "sqlite")
"""Where the benchmark's tables live: in Python, or each loaded into its own DuckDB/SQLite file."""


class EngineTables:
    """Each table of the release loaded into its own file of an SQL engine (read back through the
    safe query layer), for a benchmark run where every table access is done by the engine."""

    def __init__(self, tables: TableCache, engine: str, python_rows: int) -> None:
        import tempfile

        self.tables, self.engine, self.python_rows = tables, engine, python_rows
        self._scratch = tempfile.TemporaryDirectory(prefix="tabverify-bench-")
        self._open: dict[str, object] = {}

    def get(self, table_id: str, caption: str = ""):  # -> DatabaseTable
        """The table with that id, loaded into the engine on first use."""
        from tabverify.database import connect
        from tabverify.program.database_table import open_table
        from tabverify.program.sql import prepare_table

        if table_id not in self._open:
            if len(self._open) > 64:
                for table in self._open.values():
                    table.db.close()  # type: ignore[attr-defined]
                    Path(table.db.target).unlink(missing_ok=True)  # type: ignore[attr-defined]
                self._open.clear()
            path = Path(self._scratch.name) / f"{len(os.listdir(self._scratch.name))}.{self.engine}"
            prepare_table(self.tables.get(table_id, caption), path, self.engine)
            self._open[table_id] = open_table(connect(path), "t", cache=False, python_rows=self.python_rows)
        return self._open[table_id]


def _init_worker(
    data_dir: str, ranker_path: str | None, engine: str = "memory", python_rows: int = 64
) -> None:
    from tabverify.verify import TableVerifier

    _quiet_worker()

    _WORKER["cache"] = TableCache(data_dir)
    if engine != "memory":
        _WORKER["cache"] = EngineTables(_WORKER["cache"], engine, python_rows)  # type: ignore[arg-type]
    _WORKER["verifier"] = TableVerifier(ranker_path)


def _predict(example: Example) -> dict[str, object]:
    cache: TableCache | EngineTables = _WORKER["cache"]  # type: ignore[assignment]
    verifier = _WORKER["verifier"]
    started = time.perf_counter()
    record: dict[str, object] = {
        "table": example.table_id,
        "statement": example.statement,
        "label": example.label,
    }
    try:
        table = cache.get(example.table_id, example.caption)
        verdict = verifier.verify(example.statement, table)  # type: ignore[attr-defined]
        abstained = verdict.label is Label.NOT_ENOUGH_INFO
        record.update(
            predicted=int(verdict.forced_label is Label.ENTAILED),
            # the label the verifier gave; "predicted" is the binary answer the protocol forces
            given=verdict.label.value,
            program=verdict.program,
            # a forced guess (no evidence either way) is a coin the bench makes the verifier toss:
            # its confidence is 0.5, not the verifier's certainty that it found no evidence
            confidence=0.5 if abstained else round(verdict.confidence, 4),
        )
    except Exception as exc:  # noqa: BLE001 - one broken statement must never stop a benchmark run
        record.update(predicted=None, program="", error=f"{type(exc).__name__}: {exc}")
    record["seconds"] = round(time.perf_counter() - started, 5)
    return record


def run_benchmark(
    data_dir: str | Path,
    split: str,
    limit: int | None = None,
    jobs: int = 1,
    ranker_path: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    engine: str = "memory",
    python_rows: int = 64,
) -> dict[str, object]:
    """Verify every statement of a split and score it. Failures count as wrong and are logged.

    ``limit`` keeps the first N statements (None: all of them); ``jobs`` is the number of worker
    processes. ``engine``: ``memory``, or ``duckdb``/``sqlite`` to load every table into its own
    database file of that engine and verify through it (:mod:`tabverify.program.database_table`);
    ``python_rows``: with an engine, views of at most this many rows are read once and computed in
    Python (0: every function runs as SQL).

    Raises:
        TabverifyError: ``limit`` or ``jobs`` is below 1.
        DatasetError: the release is missing, malformed (see :func:`load_examples`), names a
            table file it does not have, or the split has no statements.
    """
    check_counts(limit=limit, jobs=jobs)
    if engine not in ENGINES:
        raise TabverifyError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")
    examples = load_examples(data_dir, split)
    if limit is not None:
        examples = examples[:limit]
    if not examples:
        raise DatasetError(f"split {split!r} in {data_dir} has no statements")
    tables = Path(data_dir) / "data" / "all_csv"
    for table_id in dict.fromkeys(e.table_id for e in examples):
        if not (tables / table_id).is_file():
            raise DatasetError(
                f"{tables / table_id} is missing: split {split!r} has statements about table "
                f"{table_id!r} but the release has no such file"
            )
    predictions: list[dict[str, object]] = []
    started = time.perf_counter()
    if jobs <= 1:
        _init_worker(str(data_dir), ranker_path, engine, python_rows)
        iterator: Iterator[dict[str, object]] = map(_predict, examples)
        for record in iterator:
            predictions.append(record)
            if progress:
                progress(len(predictions), len(examples))
    else:
        with multiprocessing.get_context("fork").Pool(
            jobs, _init_worker, (str(data_dir), ranker_path, engine, python_rows)
        ) as pool:
            for record in pool.imap(_predict, examples, chunksize=16):
                predictions.append(record)
                if progress:
                    progress(len(predictions), len(examples))
    elapsed = time.perf_counter() - started
    for record in predictions:
        if "error" in record:
            log.warning("statement failed (counted wrong): %s | %s", record["statement"], record["error"])
    metrics = score(predictions)
    if split == "val":
        for channel in ("simple", "complex"):
            ids = channel_table_ids(data_dir, channel)
            subset = [p for p in predictions if p["table"] in ids]
            if subset:
                metrics[f"accuracy_{channel}"] = score(subset)["accuracy"]
                metrics[f"n_{channel}"] = len(subset)
    seconds = sorted(float(p["seconds"]) for p in predictions)  # type: ignore[arg-type]
    metrics["median_ms"] = round(1000 * float(np.median(seconds)), 2)
    metrics["p95_ms"] = round(1000 * seconds[min(len(seconds) - 1, int(0.95 * len(seconds)))], 2)
    metrics["wall_seconds"] = round(elapsed, 1)
    metrics["failures"] = sum(1 for p in predictions if "error" in p)
    metrics["engine"] = engine
    if engine != "memory":
        metrics["python_rows"] = python_rows
    return {
        "benchmark": "tabfact",
        "split": split,
        "n": len(predictions),
        "metrics": metrics,
        "predictions": predictions,
    }


def check_counts(**counts: int | None) -> None:
    """Refuse a count option below 1 (``limit=0``, ``jobs=-2``); None means "not given".

    Raises:
        TabverifyError: a count that is not an integer of at least 1, named in the message.
    """
    for name, value in counts.items():
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise TabverifyError(f"{name} must be a whole number of at least 1, got {value!r}")


def score(predictions: list[dict[str, object]]) -> dict[str, float]:
    """Accuracy; a prediction of None (an internal failure) is wrong."""
    correct = sum(1 for p in predictions if p.get("predicted") is not None and p["predicted"] == p["label"])
    return {"accuracy": round(correct / len(predictions), 4) if predictions else 0.0}


# ---- training ----------------------------------------------------------------------------------------

_TRAIN: dict[str, object] = {}


def _ranker_groups(args: tuple[str, str, list[tuple[str, int]], str]) -> list[Group]:
    data_dir, table_id, statements, caption = args
    try:
        table = read_tabfact_csv(Path(data_dir) / "data" / "all_csv" / table_id, caption=caption)
    except TabverifyError:
        return []
    groups = []
    for statement, label in statements:
        linking = link(statement, table)
        groups.append(make_group(linking, search(table, linking).candidates, table, bool(label)))
    return groups


HUMAN_WEIGHT = 20
"""How many weak statements each human-written program counts as when the ranker is trained. Chosen
on the human programs alone, by 5-fold cross-validation over their tables (the held-out programs'
signature ranked first: 199 of the 753 the search finds with weight 0, 337 with 1, 407 with 5, 423
with 20); on the verdict hold-out of train tables it costs nothing measurable (boosted 72.85% with
20, 72.72% with 5, 72.92% without). ``scripts/exp_tabfact_ranker_human.py`` reruns both."""


def _human_groups(args: tuple[str, str, list[tuple[str, str]]]) -> list[Group]:
    """One ranker group per human program of a train table: its positives are the candidates with
    the human program's functions and columns (the statements are entailed, so all are True)."""
    data_dir, table_id, annotations = args
    try:
        table = read_tabfact_csv(Path(data_dir) / "data" / "all_csv" / table_id)
    except TabverifyError:
        return []
    groups = []
    for statement, program in annotations:
        wanted = _signature(program, table)
        if wanted is None:
            continue
        linking = link(statement, table)
        candidates = search(table, linking).candidates
        hits = np.array([_signature(str(c.program), table) == wanted for c in candidates], dtype=bool)
        if hits.any():
            groups.append(replace(make_group(linking, candidates, table, True), results=hits))
    return groups


def human_programs(data_dir: str | Path, train_tables: Iterable[str]) -> dict[str, list[tuple[str, str]]]:
    """The release's human-written programs (``bootstrap/bootstrap.json``) on the given train
    tables, as {table_id: [(statement, program), ...]}; empty when the release has no such file.
    Programs on any other table are left out without opening it."""
    if not (Path(data_dir) / "bootstrap" / "bootstrap.json").is_file():
        return {}
    keep = set(train_tables)
    out: dict[str, list[tuple[str, str]]] = {}
    for table_id, statement, program in _bootstrap(data_dir):
        if table_id in keep:
            out.setdefault(table_id, []).append((statement, program))
    return out


def _verdict_rows(args: tuple[str, str, list[tuple[str, int]], str]) -> list[tuple[dict[str, float], int]]:
    from tabverify.verify import TableVerifier

    data_dir, table_id, statements, caption = args
    try:
        table = read_tabfact_csv(Path(data_dir) / "data" / "all_csv" / table_id, caption=caption)
    except TabverifyError:
        return []
    verifier: TableVerifier = _TRAIN["verifier"]  # type: ignore[assignment]
    return [(verifier.features(table, statement), label) for statement, label in statements]


def _imap(function, work: list, jobs: int, stage: str, progress) -> Iterator:
    """``function`` of each item of ``work`` in order, in ``jobs`` forked workers, as they come."""
    if jobs <= 1:
        for i, item in enumerate(work):
            yield function(item)
            if progress:
                progress(stage, i + 1, len(work))
    else:
        with multiprocessing.get_context("fork").Pool(jobs, _quiet_worker) as pool:
            for i, result in enumerate(pool.imap(function, work, chunksize=8)):
                yield result
                if progress:
                    progress(stage, i + 1, len(work))


def _map(function, work: list, jobs: int, stage: str, progress) -> list:
    return list(_imap(function, work, jobs, stage, progress))


def _shuffled_train_tables(
    data_dir: str | Path, seed: int
) -> tuple[list[str], dict[str, list[tuple[str, int]]], dict[str, str]]:
    """The train split's table ids shuffled with ``seed`` (the order training and the hold-out
    split by), each table's (statement, label) pairs, and its caption."""
    by_table: dict[str, list[tuple[str, int]]] = {}
    captions: dict[str, str] = {}
    for example in load_examples(data_dir, "train"):
        by_table.setdefault(example.table_id, []).append((example.statement, example.label))
        captions[example.table_id] = example.caption
    table_ids = sorted(by_table)
    np.random.default_rng(seed).shuffle(table_ids)
    return table_ids, by_table, captions


def _train_ranker(
    work: list[tuple[str, str, list[tuple[str, int]], str]],
    human: list[tuple[str, str, list[tuple[str, str]]]],
    human_weight: int,
    jobs: int,
    seed: int,
    stage: str,
    progress: Callable[[str, int, int], None] | None,
) -> Ranker:
    """A ranker fitted on the weak labels of ``work``'s statements and on the human programs of
    ``human``, each counted ``human_weight`` times."""
    groups = [g for result in _map(_ranker_groups, work, jobs, f"{stage}: search", progress) for g in result]
    if human_weight and human:
        groups += [
            g
            for result in _map(_human_groups, human, jobs, f"{stage}: human programs", progress)
            for g in result
        ] * human_weight
    return Ranker(seed=seed).fit(
        groups, lambda e, s, n: progress and s % 2000 == 0 and progress(f"{stage}: epoch {e + 1}", s, n)
    )


def _featurize(
    ranker: Ranker,
    work: list[tuple[str, str, list[tuple[str, int]], str]],
    jobs: int,
    stage: str,
    progress: Callable[[str, int, int], None] | None,
    rows: FeatureRows,
    labels: list[int],
) -> None:
    """Add the verdict model's features and labels of ``work``'s statements, as ``ranker`` reads
    them, to ``rows`` and ``labels`` (compactly, table by table as the workers return them)."""
    from tabverify.verify import TableVerifier
    from tabverify.verify.decision import VerdictModel

    _TRAIN["verifier"] = TableVerifier(ranker=ranker, model=VerdictModel())  # read by forked workers
    for result in _imap(_verdict_rows, work, jobs, stage, progress):
        for features, label in result:
            rows.append(features)
            labels.append(label)


def train_models(
    data_dir: str | Path,
    ranker_tables: int | None = None,
    verdict_tables: int | None = None,
    jobs: int = 1,
    seed: int = 0,
    progress: Callable[[str, int, int], None] | None = None,
    human_weight: int = HUMAN_WEIGHT,
    cross_fit: bool = True,
) -> tuple[Ranker, VerdictModel]:
    """Train the ranker (weak supervision) and then the verdict model (boosted trees, which need
    scikit-learn: the ``lake`` or ``dev`` extra), so that no statement's verdict features come from a
    ranker trained on its weak label.

    Train tables are shuffled with ``seed``; the first ``ranker_tables`` (fold A) train the ranker
    that is returned, the next ``verdict_tables`` (fold B; default: all the rest) are featurized by
    it for the verdict model. Without ``cross_fit`` the verdict model learns from fold B only
    (``ranker_tables`` defaults to 3,000). With ``cross_fit`` a second ranker is trained on fold B
    and featurizes fold A, so the verdict model learns from every train statement (``ranker_tables``
    defaults to half the tables used - half of ``2 * verdict_tables`` when that is given - so both
    rankers see as many tables and their readings are alike); the second ranker is then dropped.
    Both rankers also learn from the release's human-written programs on all train tables
    (:func:`human_programs`; other statements than the weak ones, so about 7% of the verdict rows
    come from tables on which the featurizing ranker saw a human program), each counted
    ``human_weight`` times (0: weak supervision only). Only the train split is read (tests/bench
    checks this), and nothing is written: save the models where you want them (``Ranker.save``,
    ``VerdictModel.save``; the CLI's ``train tabfact --out DIR``).

    Raises:
        TabverifyError: a negative count, ``jobs`` below 1, or an empty fold.
    """
    from tabverify.verify.decision import FeatureRows, VerdictModel

    check_counts(jobs=jobs)
    if (
        (ranker_tables is not None and ranker_tables < 0)
        or (verdict_tables is not None and verdict_tables < 0)
        or human_weight < 0
    ):
        raise TabverifyError("ranker_tables, verdict_tables and human_weight must not be negative")
    table_ids, by_table, captions = _shuffled_train_tables(data_dir, seed)
    if ranker_tables is None:
        used = len(table_ids) if verdict_tables is None else min(len(table_ids), 2 * verdict_tables)
        ranker_tables = used // 2 if cross_fit else 3000
    fold_a = table_ids[:ranker_tables]
    fold_b = (
        table_ids[ranker_tables:]
        if verdict_tables is None
        else table_ids[ranker_tables : ranker_tables + verdict_tables]
    )
    if not (fold_a and fold_b):
        raise TabverifyError(
            f"training needs tables on both sides: {len(fold_a)} for the ranker, {len(fold_b)} after "
            f"them for the verdict model (of {len(table_ids)} train tables)"
        )

    def work(ids: list[str]) -> list[tuple[str, str, list[tuple[str, int]], str]]:
        return [(str(data_dir), t, by_table[t], captions[t]) for t in ids]

    humans = human_programs(data_dir, table_ids) if human_weight else {}
    human = [(str(data_dir), t, humans[t]) for t in sorted(humans)]
    ranker = _train_ranker(work(fold_a), human, human_weight, jobs, seed, "ranker", progress)
    rows, labels = FeatureRows(), []
    _featurize(ranker, work(fold_b), jobs, "verdict: features", progress, rows, labels)
    if cross_fit:
        second = _train_ranker(work(fold_b), human, human_weight, jobs, seed, "second ranker", progress)
        _featurize(second, work(fold_a), jobs, "verdict: features (second ranker)", progress, rows, labels)
        del second
    _TRAIN.pop("verifier", None)
    model = VerdictModel(boosted=True, seed=seed).fit(
        rows, labels, lambda s, n: progress and progress("verdict: fit", s, n)
    )
    return ranker, model


def verdict_holdout(
    data_dir: str | Path,
    l2_values: Sequence[float],
    ranker_tables: int | None = None,
    tables: int | None = None,
    holdout: float = 0.2,
    jobs: int = 1,
    seed: int = 0,
    ranker_path: str | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    boosted: bool = True,
) -> dict[str, object]:
    """Choose the verdict model's L2 on train tables only: accuracy of a model fitted on the verdict
    tables of :func:`train_models` (the same ``seed`` shuffle, after the first ``ranker_tables``,
    default half the tables as the shipped cross-fitted ranker has; the first ``tables`` of them,
    default all) less a held-out ``holdout`` share of those tables, scored
    on the held-out tables, for each L2 (and, with ``boosted``, for the boosted trees of
    :data:`tabverify.verify.decision.BOOSTED`, under ``"boosted"``). The features come from the ranker at ``ranker_path`` (the
    shipped one by default, which :func:`train_models` trained on the first ``ranker_tables``).

    Raises:
        TabverifyError: no L2 value, a hold-out share outside (0, 1), ``jobs`` below 1, a negative
            ``ranker_tables``, ``tables`` below 1, or too few tables to hold some out.
    """
    from tabverify.verify import TableVerifier
    from tabverify.verify.decision import VerdictModel

    check_counts(jobs=jobs)
    if not l2_values or not 0 < holdout < 1:
        raise TabverifyError("give at least one L2 value and a hold-out share between 0 and 1")
    if (ranker_tables is not None and ranker_tables < 0) or (tables is not None and tables < 1):
        raise TabverifyError("ranker_tables must not be negative and tables must be at least 1")
    table_ids, by_table, captions = _shuffled_train_tables(data_dir, seed)
    start = len(table_ids) // 2 if ranker_tables is None else ranker_tables
    verdict_ids = table_ids[start:]
    if tables is not None:
        verdict_ids = verdict_ids[:tables]
    held = set(verdict_ids[: int(len(verdict_ids) * holdout)])
    if not held or len(held) == len(verdict_ids):
        raise TabverifyError(
            f"{len(verdict_ids)} verdict tables after the ranker's {start}: "
            "too few to hold some out and fit on the rest"
        )
    _TRAIN["verifier"] = TableVerifier(ranker=ranker_path, model=VerdictModel())
    work = [(str(data_dir), t, by_table[t], captions[t]) for t in verdict_ids]
    results = _map(_verdict_rows, work, jobs, "verdict: features", progress)
    fit = [r for t, rows in zip(verdict_ids, results, strict=True) if t not in held for r in rows]
    test = [r for t, rows in zip(verdict_ids, results, strict=True) if t in held for r in rows]
    accuracy = {}
    for l2 in l2_values:
        model = VerdictModel(l2=l2).fit([r for r, _ in fit], [y for _, y in fit])
        correct = sum((model.probability(r) >= 0.5) == bool(y) for r, y in test)
        accuracy[str(l2)] = round(correct / len(test), 4) if test else 0.0
    if boosted:
        model = VerdictModel(boosted=True, seed=seed).fit([r for r, _ in fit], [y for _, y in fit])
        correct = sum((model.probability(r) >= 0.5) == bool(y) for r, y in test)
        accuracy["boosted"] = round(correct / len(test), 4) if test else 0.0
    return {"fit_statements": len(fit), "holdout_statements": len(test), "accuracy": accuracy}


# ---- checks against the human-written programs ------------------------------------------------------


def _bootstrap(data_dir: str | Path) -> list[tuple[str, str, str]]:
    """(table_id, statement, program) for every human-written program of the release."""
    path = Path(data_dir) / "bootstrap" / "bootstrap.json"
    data = _read_json(path)
    if not isinstance(data, dict):
        raise DatasetError(f"{path}: expected an object {{table_id: [[statement, ..., program], ...]}}")
    out = []
    for table_id, entries in data.items():
        _table_file_name(path, table_id, "entry")
        if not isinstance(entries, list):
            raise DatasetError(f"{path}: entry {table_id!r} must be a list of annotations")
        for i, entry in enumerate(entries):
            if (
                not isinstance(entry, list)
                or len(entry) < 5
                or not isinstance(entry[0], str)
                or not isinstance(entry[4], str)
            ):
                raise DatasetError(
                    f"{path}: annotation {i} of entry {table_id!r} must be a list whose first item "
                    "is the statement and fifth the program (texts)"
                )
            out.append((table_id, entry[0], entry[4]))
    return out


def bootstrap_execution(data_dir: str | Path) -> dict[str, object]:
    """Execute every human program on its table; how many return True, and why the rest fail.

    Failures are grouped by cause: the program returned False, or raised (syntax, type or
    execution error, with the error class)."""
    from tabverify.program import execute

    cache = TableCache(data_dir)
    causes: dict[str, list[dict[str, str]]] = {}
    ok = 0
    items = _bootstrap(data_dir)
    if not items:
        raise DatasetError(f"{Path(data_dir) / 'bootstrap' / 'bootstrap.json'} holds no human programs")
    for table_id, statement, program in items:
        table = cache.get(table_id)
        try:
            value = execute(program, table).value
            if value is True:
                ok += 1
                continue
            cause, detail = _why_false(program, table)
        except TabverifyError as exc:
            cause, detail = f"error: {type(exc).__name__}", str(exc).splitlines()[0]
        causes.setdefault(cause, []).append(
            {"table": table_id, "statement": statement, "program": program, "detail": detail}
        )
    return {
        "n": len(items),
        "true": ok,
        "rate": round(ok / len(items), 4),
        "failures": {cause: entries for cause, entries in sorted(causes.items())},
    }


_OPPOSITES = {
    "argmax": "argmin",
    "argmin": "argmax",
    "max": "min",
    "min": "max",
    "greater": "less",
    "less": "greater",
    "filter_greater": "filter_less",
    "filter_less": "filter_greater",
}


def _why_false(program_text: str, table: Table) -> tuple[str, str]:
    """A diagnosis of a human program that returns False on its own table."""
    from tabverify.program import Call, execute, parse_program
    from tabverify.program.execute import evaluate
    from tabverify.program.functions import Context
    from tabverify.program.values import quantity_of

    program = parse_program(program_text)
    ctx = Context(table)
    for node in program.walk():
        if isinstance(node, Call) and node.func.startswith("filter_"):
            try:
                if not evaluate(node, ctx):
                    return "a filter selects no row (value not in the table as written)", str(node)
            except TabverifyError:
                pass
    flipped = program_text
    for name, opposite in _OPPOSITES.items():
        flipped = flipped.replace(f"{name}{{", f"@{opposite}{{")
    try:
        if execute(flipped.replace("@", ""), table).value is True:
            return "direction reversed (highest/lowest, more/less read the other way)", ""
    except TabverifyError:
        pass
    if program.func == "eq" and isinstance(program.args[0], Call):
        try:
            computed = quantity_of(evaluate(program.args[0], ctx))
            written = quantity_of(evaluate(program.args[1], ctx))
        except TabverifyError:
            computed = written = None
        if computed is not None and written is not None and written.value:
            ratio = abs(computed.value - written.value) / abs(written.value)
            if ratio <= 0.05:
                return (
                    "approximate number (within 5%, not at the written precision)",
                    f"{computed.value:g} vs {written.text}",
                )
            return "different number", f"{computed.value:g} vs {written.text}"
    return "other (value or reading differs)", ""


def _signature(program_text: str, table: Table) -> tuple[tuple[str, ...], frozenset[int]] | None:
    from tabverify.program import parse_program
    from tabverify.program.execute import resolve_header

    try:
        program = parse_program(program_text)
        columns = frozenset(resolve_header(table, h) for h in program.headers)
    except TabverifyError:
        return None
    return tuple(sorted(program.functions)), columns


def _outline(program_text: str) -> str:
    """A program's two top levels of functions, as the ranker's skeleton feature writes them:
    ``and(only(filter_eq),eq(hop))``; a function of no function is ``avg()``."""
    from tabverify.program import parse_program
    from tabverify.program.ranker import _skeleton

    return _skeleton(parse_program(program_text), 2)


def search_recall(data_dir: str | Path) -> dict[str, object]:
    """Share of human-annotated statements whose candidate set holds a program with the same
    functions (as a multiset) and the same columns as the human program; ``"by_outline"`` gives,
    for each outline of the human programs (their two top levels of functions, most frequent
    first), how many there are and how many the search misses."""
    cache = TableCache(data_dir)
    hits = total = 0
    outlines: dict[str, list[int]] = {}
    for table_id, statement, program in _bootstrap(data_dir):
        table = cache.get(table_id)
        wanted = _signature(program, table)
        if wanted is None:
            continue
        total += 1
        linking = link(statement, table)
        found = any(_signature(str(c.program), table) == wanted for c in search(table, linking).candidates)
        hits += found
        counts = outlines.setdefault(_outline(program), [0, 0])
        counts[0] += 1
        counts[1] += not found
    ordered = sorted(outlines.items(), key=lambda item: (-item[1][0], item[0]))
    return {
        "n": total,
        "hits": hits,
        "recall": round(hits / total, 4) if total else 0.0,
        "by_outline": {name: {"n": n, "missed": missed} for name, (n, missed) in ordered},
    }
