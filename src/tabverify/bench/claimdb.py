"""The ClaimDB benchmark (Theologitis et al., ACL 2026): claims against whole BIRD databases.

Two modes:

- ``schema-only``: NOT ENOUGH INFO detection alone, from the claim, its extra_info and the schema
  (``dev_tables.json`` + descriptions); no database is opened. Metrics: NEI precision, recall, F1,
  subtype accuracy (over gold NEI claims predicted NEI) and recall per subtype. With ``cv=K`` every
  claim is predicted by a model trained without any claim of its database (grouped K-fold
  cross-validation; the threshold is chosen inside the training folds), which is how the dev
  numbers are reported; without it the shipped model predicts (on the dev claims it was trained
  on, so those numbers are training-set numbers and the result says so).
- ``full``: every claim verified against ``<dbs>/<db_id>/<db_id>.sqlite`` by the LLM agent
  (:class:`tabverify.claimdb.agent.LlmVerifier`): accuracy, macro-F1 over the three classes,
  per-class precision/recall/F1, the confusion matrix, NEI recall by subtype, and tool-call and
  token statistics read from the per-claim traces.

A verifier sees only the claim, its extra_info and the database: never ``bird_id`` or the label.
Claims without a label are predicted and written, not scored.
"""

from __future__ import annotations

import json
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tabverify.claimdb.claims import Claim, ClaimProblem, claimdb_category, claimdb_label, read_claims
from tabverify.claimdb.nei import NeiCheck, NeiDetector, cross_validate
from tabverify.claimdb.schema import SchemaSet, load_schemas
from tabverify.errors import DatasetError
from tabverify.text.encoders import get_encoder
from tabverify.verify.verdict import NeiSubtype, Verdict

CLASSES = ("ENTAILED", "CONTRADICTED", "NOT ENOUGH INFO")
SUBTYPE_NAMES = tuple(claimdb_category(s) for s in NeiSubtype)

Progress = Callable[[str, int, int], None]


def _ratio(a: float, b: float) -> float:
    return round(a / b, 4) if b else 0.0


def _f1(p: float, r: float) -> float:
    return round(2 * p * r / (p + r), 4) if p + r else 0.0


def nei_metrics(predictions: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """NOT ENOUGH INFO detection metrics over the labelled predictions."""
    scored = [p for p in predictions if p["label"] is not None]
    gold = [p["label"] == "NOT ENOUGH INFO" for p in scored]
    said = [p["predicted"] == "NOT ENOUGH INFO" for p in scored]
    tp = sum(g and s for g, s in zip(gold, said, strict=True))
    precision, recall = _ratio(tp, sum(said)), _ratio(tp, sum(gold))
    # subtype accuracy: over gold NEI claims with a gold subtype that were predicted NEI
    both = [
        p
        for p in scored
        if p["label"] == "NOT ENOUGH INFO"
        and p["predicted"] == "NOT ENOUGH INFO"
        and p["subtype"] is not None
    ]
    right = sum(p["subtype"] == p["predicted_subtype"] for p in both)
    per_subtype = {}
    for name in SUBTYPE_NAMES:
        of = [p for p in scored if p["subtype"] == name]
        found = sum(p["predicted"] == "NOT ENOUGH INFO" for p in of)
        typed = sum(p["predicted_subtype"] == name for p in of)
        per_subtype[name] = {
            "n": len(of),
            "nei_recall": _ratio(found, len(of)),
            "subtype_recall": _ratio(typed, len(of)),
        }
    return {
        "nei_precision": precision,
        "nei_recall": recall,
        "nei_f1": _f1(precision, recall),
        "subtype_accuracy": _ratio(right, len(both)),
        "subtype_n": len(both),
        "per_subtype": per_subtype,
        "n_scored": len(scored),
    }


def verdict_metrics(predictions: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Accuracy, macro-F1, per-class P/R/F1 and the confusion matrix (gold -> predicted)."""
    scored = [p for p in predictions if p["label"] is not None]
    confusion = {g: dict.fromkeys((*CLASSES, "none"), 0) for g in CLASSES}
    for p in scored:
        confusion[p["label"]][p["predicted"] if p["predicted"] in CLASSES else "none"] += 1
    per_class = {}
    for c in CLASSES:
        tp = confusion[c][c]
        predicted = sum(confusion[g][c] for g in CLASSES)
        actual = sum(confusion[c].values())
        precision, recall = _ratio(tp, predicted), _ratio(tp, actual)
        per_class[c] = {"precision": precision, "recall": recall, "f1": _f1(precision, recall), "n": actual}
    correct = sum(confusion[c][c] for c in CLASSES)
    result = {
        "accuracy": _ratio(correct, len(scored)),
        "macro_f1": round(sum(v["f1"] for v in per_class.values()) / len(CLASSES), 4),
        "per_class": per_class,
        "confusion": confusion,
        "n_scored": len(scored),
    }
    result["nei_recall_by_subtype"] = {
        name: v["nei_recall"] for name, v in nei_metrics(predictions)["per_subtype"].items()
    }
    return result


def _record(claim: Claim, predicted: str | None, subtype: str | None, **extra: Any) -> dict[str, Any]:
    return {
        "id": claim.claim_id,
        "db_name": claim.db_name,
        "label": claimdb_label(claim.label),
        "predicted": predicted,
        "subtype": claimdb_category(claim.category),
        "predicted_subtype": subtype,
        **extra,
    }


def _nei_record(claim: Claim, check: NeiCheck) -> dict[str, Any]:
    predicted = "NOT ENOUGH INFO" if check.nei else "SUPPORTED_OR_CONTRADICTED"
    return _record(
        claim,
        predicted,
        claimdb_category(check.subtype),
        probability=round(check.probability, 4),
        reason=check.reason,
    )


def _known_claims(claims: list[Claim], schemas: SchemaSet, problems: list[ClaimProblem]) -> list[Claim]:
    kept = []
    for claim in claims:
        if claim.db_name in schemas:
            kept.append(claim)
        else:
            problems.append(
                ClaimProblem(
                    claim.line, f"unknown db_id {claim.db_name!r}: the schema folder does not describe it"
                )
            )
    return kept


def run_schema_only(
    claims: list[Claim],
    schemas: SchemaSet,
    *,
    encoder: str = "auto",
    cv: int | None = None,
    model_path: Path | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """NOT ENOUGH INFO detection on ``claims`` (schema only); see the module docstring."""
    started = time.perf_counter()
    if cv is not None:
        labelled = [c for c in claims if c.label is not None]
        if len(labelled) != len(claims):
            raise DatasetError("--cv needs a labelled claims file (every claim with a label)")
        databases = len({c.db_name for c in claims})
        if databases < 2 or cv > databases:
            fix = (
                "give claims of at least 2 databases" if databases < 2 else f"give at most {databases} folds"
            )
            raise DatasetError(
                f"--cv {cv}: the folds are grouped by database and the claims come from {databases} "
                f"database{'s' if databases != 1 else ''}; {fix}"
            )
        done = [0]

        def note(message: str) -> None:
            if message.startswith("fold") and progress:
                done[0] += 1
                progress("cross-validation", done[0], cv)

        chosen = get_encoder(encoder)
        checks = cross_validate(claims, schemas, encoder=chosen, folds=cv, progress=note)
        detector_encoder = chosen.name
        protocol = (
            f"grouped {cv}-fold cross-validation by database (threshold chosen inside the training folds)"
        )
    else:
        detector = NeiDetector(encoder, model_path)
        detector_encoder = detector.encoder.name
        checks = []
        step = 64
        for start in range(0, len(claims), step):
            batch = claims[start : start + step]
            checks += detector.check_many((c.claim, c.extra_info, schemas.get(c.db_name)) for c in batch)
            if progress:
                progress("nei", min(start + step, len(claims)), len(claims))
        protocol = "the shipped model" if model_path is None else f"the model {model_path}"
        protocol += " (trained on the 400 ClaimDB dev claims: numbers on them are training-set numbers)"
    predictions = [_nei_record(c, k) for c, k in zip(claims, checks, strict=True)]
    return {
        "mode": "schema-only",
        "encoder": detector_encoder,
        "protocol": protocol,
        "metrics": nei_metrics(predictions),
        "predictions": predictions,
        "seconds": round(time.perf_counter() - started, 2),
    }


def _steps(verdict: Verdict, kind: str) -> int:
    return sum(1 for step in verdict.trace if step.kind == kind)


def database_paths(claims: Sequence[Claim], dbs_dir: Path) -> dict[str, Path]:
    """The database file of each ``db_name`` of ``claims`` in the BIRD layout
    (``<dbs>/<db_id>/<db_id>.sqlite``); DatasetError naming the first that is missing."""
    paths = {}
    for db_id in sorted({c.db_name for c in claims}):
        path = dbs_dir / db_id / f"{db_id}.sqlite"
        if not path.is_file():
            raise DatasetError(
                f"--dbs {dbs_dir}: no {db_id}/{db_id}.sqlite; the BIRD layout is <dbs>/<db_id>/<db_id>.sqlite"
            )
        paths[db_id] = path
    return paths


def run_full(
    claims: list[Claim],
    dbs_dir: Path,
    schemas: SchemaSet,
    verifier: Any,
    *,
    jobs: int = 1,
    progress: Progress | None = None,
    problems: list[ClaimProblem] | None = None,
) -> dict[str, Any]:
    """Every claim verified against its BIRD database by ``verifier`` (an LlmVerifier)."""
    from tabverify.database import connect

    started = time.perf_counter()
    paths = database_paths(claims, dbs_dir)
    local = threading.local()
    lock = threading.Lock()
    done = [0]
    descriptions = schemas.folder / "database_description"

    def database(db_id: str):
        opened = getattr(local, "dbs", None)
        if opened is None:
            opened = local.dbs = {}
        if db_id not in opened:
            folder = descriptions / db_id
            opened[db_id] = connect(paths[db_id], descriptions=folder if folder.is_dir() else None)
        return opened[db_id]

    def one(claim: Claim) -> dict[str, Any]:
        verdict = verifier.verify(claim.claim, database(claim.db_name), claim.extra_info, claim.claim_id)
        record = _record(
            claim,
            claimdb_label(verdict.label),
            claimdb_category(verdict.subtype),
            confidence=round(verdict.confidence, 4),
            tool_calls=_steps(verdict, "query"),
            failed=verdict.confidence == 0,
            sql=verdict.sql,
        )
        with lock:
            done[0] += 1
            if progress:
                progress("claims", done[0], len(claims))
        return record

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        predictions = list(pool.map(one, claims))
    metrics = verdict_metrics(predictions)
    calls = [p["tool_calls"] for p in predictions]
    metrics["tool_calls"] = {
        "mean": round(statistics.fmean(calls), 2) if calls else 0.0,
        "median": statistics.median(calls) if calls else 0,
        "max": max(calls, default=0),
        "histogram": dict(sorted(Counter(calls).items())),
    }
    metrics["failed_claims"] = sum(p["failed"] for p in predictions)
    return {
        "mode": "full",
        "metrics": metrics,
        "predictions": predictions,
        "seconds": round(time.perf_counter() - started, 2),
    }


def token_statistics(trace_path: Path) -> dict[str, Any]:
    """Token and call statistics from a trace file (one JSON record per claim)."""
    prompt, completion, llm_calls, elapsed = [], [], [], []
    try:
        lines = trace_path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return {}
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        tokens = record.get("tokens") or {}
        prompt.append(int(tokens.get("prompt_tokens", 0) or 0))
        completion.append(int(tokens.get("completion_tokens", 0) or 0))
        llm_calls.append(int(record.get("llm_calls", 0) or 0))
        elapsed.append(float(record.get("elapsed_s", 0) or 0))
    if not prompt:
        return {}
    return {
        "claims": len(prompt),
        "prompt_tokens_mean": round(statistics.fmean(prompt), 1),
        "completion_tokens_mean": round(statistics.fmean(completion), 1),
        "prompt_tokens_total": sum(prompt),
        "completion_tokens_total": sum(completion),
        "llm_calls_mean": round(statistics.fmean(llm_calls), 2),
        "seconds_per_claim_median": round(statistics.median(elapsed), 3),
    }


def load_inputs(
    claims_path: Path, schema_dir: Path, limit: int | None = None
) -> tuple[list[Claim], SchemaSet, list[ClaimProblem]]:
    """The claims (bad lines and unknown databases reported, not fatal) and the schemas."""
    schemas = load_schemas(schema_dir)
    claims, problems = read_claims(claims_path)
    claims = _known_claims(claims, schemas, problems)
    problems.sort(key=lambda problem: problem.line)
    if limit is not None:
        claims = claims[:limit]
    if not claims:
        skipped = f"{len(problems)} line{'s' if len(problems) != 1 else ''} skipped"
        if problems:
            skipped += f"; the first: {problems[0]}"
        raise DatasetError(f"{claims_path}: no usable claims ({skipped})")
    return claims, schemas, problems


def summary(result: dict[str, Any], claims_path: Path, problems: Sequence[ClaimProblem]) -> dict[str, Any]:
    """The benchmark's JSON: ``benchmark``, ``mode``, ``n``, ``metrics``, ``predictions`` and the rest."""
    return {
        "benchmark": "claimdb",
        "mode": result["mode"],
        "claims": str(claims_path),
        "n": len(result["predictions"]),
        **{k: v for k, v in result.items() if k not in ("mode", "predictions")},
        "skipped_lines": [str(p) for p in problems],
        "predictions": result["predictions"],
    }
