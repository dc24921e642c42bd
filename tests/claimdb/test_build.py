"""The ClaimDB construction pipeline (tabverify.claimdb.build) on SQLite files written here: the
composition pre-filter and its drop reasons, pairs files, NEI ranking with the lexical encoder, and
(further down) generation and judging against a real HTTP chat server with scripted models."""

from __future__ import annotations

import hashlib
import json
import math
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tabverify.claimdb.build import (
    CRITERIA,
    BirdDatabases,
    BuiltClaim,
    Dropped,
    Kept,
    Pair,
    build,
    composition,
    generate,
    judge,
    nei_threshold,
    prefilter,
    rank_nei,
    read_pairs,
)
from tabverify.claimdb.claims import read_claims
from tabverify.errors import DatasetError, LlmError
from tabverify.llm.client import ChatClient, LlmConfig
from tabverify.verify.verdict import Label, NeiSubtype
from tests.llm_server import LlmServer, Reply, text

# ---- a small BIRD-layout database ----------------------------------------------------------------

TEAMS = [(1, "Harbor Hawks", "Portsmouth"), (2, "Valley Vipers", "Fresno"), (3, "Mountain Mules", "Denver")]
CITIES = ["Portsmouth", "Fresno", "Denver"]


def make_league(path: Path) -> None:
    """teams(3) - players(30) - seasons(2) - stats(60): a schema with four tables and foreign keys."""
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path)
    connection.executescript(
        """
        CREATE TABLE teams (id INTEGER PRIMARY KEY, name TEXT, city TEXT);
        CREATE TABLE players (id INTEGER PRIMARY KEY, name TEXT, team_id INTEGER REFERENCES teams(id),
                              position TEXT);
        CREATE TABLE seasons (id INTEGER PRIMARY KEY, year INTEGER);
        CREATE TABLE stats (player_id INTEGER REFERENCES players(id), season_id INTEGER REFERENCES seasons(id),
                            points INTEGER, games INTEGER);
        """
    )
    connection.executemany("INSERT INTO teams VALUES (?, ?, ?)", TEAMS)
    positions = ["guard", "forward", "center"]
    connection.executemany(
        "INSERT INTO players VALUES (?, ?, ?, ?)",
        [(i, f"Player {i:02d}", 1 + i % 3, positions[i % 3]) for i in range(1, 31)],
    )
    connection.executemany("INSERT INTO seasons VALUES (?, ?)", [(1, 2022), (2, 2023)])
    connection.executemany(
        "INSERT INTO stats VALUES (?, ?, ?, ?)",
        [(i, s, (i * 7 + s * 13) % 100, 10 + i % 5) for i in range(1, 31) for s in (1, 2)],
    )
    connection.commit()
    connection.close()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def dbs_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "dbs"
    make_league(folder / "league" / "league.sqlite")
    return folder


# every pair names what stage (a) must do with it: ("kept", criteria) or ("dropped", reason)
PAIRS: list[tuple[str, str, tuple]] = [
    ("order", "SELECT name FROM teams ORDER BY name", ("kept", ("order_by",))),
    ("top", "SELECT name FROM players ORDER BY id DESC LIMIT 1", ("kept", ("order_by", "superlative"))),
    ("count", "SELECT COUNT(*) FROM players WHERE team_id = 2", ("kept", ("aggregate",))),
    ("max", "SELECT MAX(points) FROM stats", ("kept", ("superlative", "aggregate"))),
    ("window", "SELECT name, RANK() OVER (ORDER BY id) FROM teams", ("kept", ("window",))),
    (
        "join3",
        "SELECT DISTINCT p.name FROM players AS p JOIN teams AS t ON p.team_id = t.id "
        "JOIN stats AS s ON s.player_id = p.id WHERE s.points > 90 AND t.city = 'Fresno'",
        ("kept", ("join3",)),
    ),
    (
        "join3-sub",
        "SELECT name FROM players WHERE team_id IN (SELECT id FROM teams WHERE city = 'Denver') "
        "AND id IN (SELECT player_id FROM stats WHERE points > 90)",
        ("kept", ("join3",)),
    ),
    ("none", "SELECT name FROM teams WHERE id = 1", ("dropped", "no_composition")),
    ("many", "SELECT name, COUNT(*) FROM players GROUP BY name", ("dropped", "too_many_rows")),
    ("unparseable", "SELECT COUNT( FROM players", ("dropped", "unparseable")),
    ("two", "SELECT COUNT(*) FROM players; SELECT 1", ("dropped", "unparseable")),
    ("bad-column", "SELECT COUNT(no_such_column) FROM players", ("dropped", "sql_error")),
    ("write", "DELETE FROM players WHERE id IN (SELECT MAX(id) FROM players)", ("dropped", "refused")),
    ("empty", "SELECT MAX(points) FROM stats WHERE points > 1000", ("dropped", "empty_answer")),
    (
        "slow",
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c",
        ("dropped", "timeout"),
    ),
]


def pairs_of(db_id: str = "league") -> list[Pair]:
    return [Pair(pid, f"question {pid}?", sql, db_id, f"hint {pid}") for pid, sql, _ in PAIRS]


# ---- composition -------------------------------------------------------------------------------


@pytest.mark.parametrize("pid,sql,expected", PAIRS, ids=[p[0] for p in PAIRS])
def test_composition_criteria(pid: str, sql: str, expected: tuple) -> None:
    if expected[1] == "unparseable":
        with pytest.raises(ValueError):
            composition(sql)
        return
    found = composition(sql)
    assert set(found.criteria) <= set(CRITERIA)
    if expected[0] == "kept":
        assert found.criteria == expected[1]
    elif expected[1] == "no_composition":
        assert found.criteria == ()


def test_composition_details() -> None:
    # distinct tables: a self-join counts once, CTE names are not tables, subqueries count
    assert (
        composition("SELECT a.x FROM t AS a JOIN t AS b ON a.id = b.id JOIN u ON u.id = a.id").criteria == ()
    )
    cte = "WITH w AS (SELECT * FROM a) SELECT * FROM w JOIN b ON w.i = b.i"
    assert composition(cte).tables == ("a", "b")
    assert composition(cte + " JOIN c ON c.i = b.i").criteria == ("join3",)
    # an ORDER BY inside a window is not an ORDER BY clause; a windowed SUM is a window, not an aggregate
    assert composition("SELECT SUM(x) OVER (ORDER BY y) FROM t").criteria == ("window",)
    # SQLite's two-argument max() is a scalar, not an aggregate or a superlative
    assert composition("SELECT max(a, b) FROM t").criteria == ()
    # SQLite-only aggregates parsed as anonymous functions still count
    assert composition("SELECT total(x) FROM t").criteria == ("aggregate",)
    assert composition("SELECT MIN(x) FROM t").criteria == ("superlative", "aggregate")
    # ORDER BY ... LIMIT in a subquery is a superlative too
    sub = "SELECT name FROM p WHERE id = (SELECT id FROM s ORDER BY points DESC LIMIT 1)"
    assert composition(sub).criteria == ("order_by", "superlative")


# ---- prefilter ---------------------------------------------------------------------------------


def test_prefilter_keeps_and_drops_for_each_reason(dbs_dir: Path) -> None:
    before = digest(dbs_dir / "league" / "league.sqlite")
    seen: list[str] = []
    pairs = pairs_of() + [Pair("nowhere", "q?", "SELECT COUNT(*) FROM teams", "missing_db")]
    kept, dropped = prefilter(pairs, dbs_dir, timeout_s=0.5, on_result=lambda r: seen.append(r.pair.pair_id))
    assert seen == [p.pair_id for p in pairs]  # every outcome reported, in order
    outcome: dict[str, Kept | Dropped] = {o.pair.pair_id: o for o in [*kept, *dropped]}
    for pid, _sql, expected in PAIRS:
        result = outcome[pid]
        if expected[0] == "kept":
            assert isinstance(result, Kept), (pid, result)
            assert result.criteria == expected[1]
            assert 1 <= len(result.rows) <= 10
        else:
            assert isinstance(result, Dropped), (pid, result)
            assert result.reason == expected[1], (pid, result)
    assert outcome["nowhere"].reason == "no_database"  # type: ignore[union-attr]
    assert "missing_db" in outcome["nowhere"].detail  # type: ignore[union-attr]
    # answers and details
    assert outcome["count"].rows == ((10,),)  # type: ignore[union-attr]
    assert outcome["order"].rows == (("Harbor Hawks",), ("Mountain Mules",), ("Valley Vipers",))  # type: ignore[union-attr]
    assert outcome["join3"].tables == ("players", "stats", "teams")  # type: ignore[union-attr]
    assert "30 rows" in outcome["many"].detail  # type: ignore[union-attr]
    assert "DELETE" in outcome["write"].detail  # type: ignore[union-attr]
    assert outcome["write"].criteria == ("superlative", "aggregate")  # type: ignore[union-attr]
    assert outcome["empty"].detail == "every value is NULL"  # type: ignore[union-attr]
    assert [k.pair.pair_id for k in kept] == [p for p, _s, e in PAIRS if e[0] == "kept"]  # input order
    # the database is never written
    assert digest(dbs_dir / "league" / "league.sqlite") == before
    assert sqlite3.connect(dbs_dir / "league" / "league.sqlite").execute(
        "SELECT COUNT(*) FROM players"
    ).fetchone() == (30,)


def test_prefilter_options_and_database_mapping(dbs_dir: Path) -> None:
    pairs = [p for p in pairs_of() if p.pair_id in ("many", "empty", "order")]
    with BirdDatabases(dbs_dir) as databases:
        database = databases.get("league")
        assert database is not None
        kept, dropped = prefilter(pairs, {"league": database}, max_rows=40, drop_empty=False)
        assert not database._closed  # a database passed in is left open for its owner
    assert [k.pair.pair_id for k in kept] == ["order", "many", "empty"] and dropped == []
    assert len(kept[1].rows) == 30 and kept[2].rows == ((None,),)
    kept, dropped = prefilter(pairs, dbs_dir, max_rows=2)
    assert {d.pair.pair_id: d.reason for d in dropped} == {"order": "too_many_rows", "many": "too_many_rows",
                                                           "empty": "empty_answer"}  # fmt: skip
    with pytest.raises(ValueError):
        prefilter(pairs, dbs_dir, max_rows=0)
    with pytest.raises(DatasetError):
        prefilter(pairs, dbs_dir / "nope")


# ---- pairs files -------------------------------------------------------------------------------


def test_read_pairs_jsonl_and_bird_list(tmp_path: Path) -> None:
    lines = [
        {"question_id": 7, "question": "How many?", "SQL": "SELECT COUNT(*) FROM t", "db_id": "d",
         "evidence": "many refers to COUNT"},
        {"question": "No id", "sql": "SELECT 1", "db_id": "d"},
        {"question": "No SQL", "db_id": "d"},
        {"question_id": 7, "question": "Again", "SQL": "SELECT 2", "db_id": "d"},
    ]  # fmt: skip
    jsonl = tmp_path / "pairs.jsonl"
    jsonl.write_text("\n".join(json.dumps(r) for r in lines) + "\n{not json\n\n", encoding="utf-8")
    pairs, problems = read_pairs(jsonl)
    assert pairs == [
        Pair("7", "How many?", "SELECT COUNT(*) FROM t", "d", "many refers to COUNT"),
        Pair("2", "No id", "SELECT 1", "d", ""),
    ]
    assert [(p.position, p.message.split(" ")[0]) for p in problems] == [(5, "not"), (3, "no"), (4, "pair")]
    listed = tmp_path / "dev.json"
    listed.write_text(json.dumps(lines[:2]), encoding="utf-8")
    pairs, problems = read_pairs(listed)
    assert [p.pair_id for p in pairs] == ["7", "2"] and problems == []
    with pytest.raises(DatasetError):
        read_pairs(tmp_path / "missing.jsonl")


def test_build_without_models_runs_stage_a_and_resumes(tmp_path: Path, dbs_dir: Path) -> None:
    pairs_path = tmp_path / "pairs.jsonl"
    pairs_path.write_text(
        "\n".join(
            json.dumps(
                {
                    "question_id": p.pair_id,
                    "question": p.question,
                    "SQL": p.sql,
                    "db_id": p.db_id,
                    "evidence": p.evidence,
                }
            )
            for p in pairs_of()
        )
        + "\n",  # fmt: skip
        encoding="utf-8",
    )
    out = tmp_path / "out"
    ticks: list[tuple[str, int, int]] = []
    report = build(pairs_path, dbs_dir, out, timeout_s=0.5, progress=lambda *a: ticks.append(a)).to_dict()
    stage = (out / "prefilter.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(stage) == len(PAIRS)
    assert ticks[-1] == ("prefilter", len(PAIRS), len(PAIRS))
    expected_kept = sum(1 for _p, _s, e in PAIRS if e[0] == "kept")
    assert report["prefilter"]["kept"] == expected_kept
    assert report["prefilter"]["dropped_by_reason"] == {
        "empty_answer": 1, "no_composition": 1, "refused": 1, "sql_error": 1, "timeout": 1,
        "too_many_rows": 1, "unparseable": 2,
    }  # fmt: skip
    assert report["generation"] == {"skipped": "no generator model given"}
    assert not (out / "claims.jsonl").exists()
    assert json.loads((out / "report.json").read_text(encoding="utf-8")) == report
    # resume: nothing re-run, the same report; an interrupted last line is cut and redone
    ticks.clear()
    again = build(pairs_path, dbs_dir, out, timeout_s=0.5, progress=lambda *a: ticks.append(a)).to_dict()
    assert ticks == [] and again == report
    (out / "prefilter.jsonl").write_text("\n".join(stage[:-1]) + "\n" + stage[-1][:20], encoding="utf-8")
    third = build(pairs_path, dbs_dir, out, timeout_s=0.5, progress=lambda *a: ticks.append(a)).to_dict()
    assert ticks == [("prefilter", len(PAIRS), len(PAIRS))] and third == report
    assert len((out / "prefilter.jsonl").read_text(encoding="utf-8").splitlines()) == len(PAIRS)
    # other stage settings on resume are refused
    with pytest.raises(DatasetError, match="other settings"):
        build(pairs_path, dbs_dir, out, max_rows=5)
    assert (
        build(pairs_path, dbs_dir, out, max_rows=5, timeout_s=0.5, resume=False).to_dict()["prefilter"][
            "kept"
        ]
        > 0
    )


# ---- stage (d): NEI ranking ----------------------------------------------------------------------


def nei_claim(claim_id: str, text: str, question: str, category: NeiSubtype = NeiSubtype.SUBJECTIVE,
              rows: tuple = (("Harbor Hawks",),)) -> BuiltClaim:  # fmt: skip
    return BuiltClaim(claim_id, "league", Label.NOT_ENOUGH_INFO, category, text, "", claim_id.split("-")[0],
                      question, "SELECT 1", ("name",), rows)  # fmt: skip


QUESTION = "Which team from Portsmouth scored the most points in the 2023 season?"
NEI_CLAIMS = [
    nei_claim(
        "1-N1",
        "The Harbor Hawks from Portsmouth scored the most points in the 2023 season because of their coach.",
        QUESTION,
        NeiSubtype.OUT_OF_SCHEMA,
    ),  # fmt: skip
    nei_claim(
        "1-N2", "The Harbor Hawks were the most exciting team in Portsmouth in the 2023 season.", QUESTION
    ),
    nei_claim(
        "1-N3",
        "If the Harbor Hawks had moved, Portsmouth would have lost its best team.",
        QUESTION,
        NeiSubtype.COUNTERFACTUAL,
    ),  # fmt: skip
    nei_claim("2-N1", "Fans adore purple uniforms.", "How many players are guards?", rows=((10,),)),
    nei_claim(
        "2-N2",
        "Weather rarely matters.",
        "How many players are guards?",
        NeiSubtype.COUNTERFACTUAL,
        rows=((10,),),
    ),  # fmt: skip
    nei_claim(
        "3-N1", "Mules are stubborn animals.", "Which player has the highest points?", rows=(("Player 07",),)
    ),
    nei_claim(
        "3-N2",
        "Denver's altitude hurt visiting teams.",
        "Which player has the highest points?",
        NeiSubtype.OUT_OF_SCHEMA,
        rows=(("Player 07",),),
    ),  # fmt: skip
    nei_claim("4-N1", "Seasons felt long.", "List the seasons.", rows=((2022,), (2023,))),
]
OTHER = BuiltClaim("1-E1", "league", Label.ENTAILED, None, "The Harbor Hawks scored the most points.", "", "1",
                   QUESTION, "SELECT 1", ("name",), (("Harbor Hawks",),))  # fmt: skip


def test_rank_nei_keeps_the_most_similar_quartile() -> None:
    ranked = rank_nei([OTHER, *NEI_CLAIMS])
    assert len(ranked) == len(NEI_CLAIMS)  # ENTAILED claims are not ranked
    assert [r.rank for r in ranked] == list(range(1, len(NEI_CLAIMS) + 1))
    similarities = [r.similarity for r in ranked]
    assert similarities == sorted(similarities, reverse=True)
    assert all(-1.0 <= s <= 1.0 + 1e-9 for s in similarities)
    kept = [r for r in ranked if r.kept]
    assert len(kept) == math.ceil(len(NEI_CLAIMS) / 4) == 2
    assert kept == ranked[:2]  # the kept ones are the most similar
    # the on-topic claims about the source question are the hardest; the off-topic ones are not kept
    assert {r.claim.claim_id for r in kept} <= {"1-N1", "1-N2", "1-N3"}
    assert nei_threshold(ranked) == min(r.similarity for r in kept)
    assert rank_nei([OTHER]) == [] and nei_threshold([]) is None


def test_rank_nei_is_deterministic_and_batch_independent() -> None:
    first = rank_nei(NEI_CLAIMS)
    again = rank_nei(list(reversed(NEI_CLAIMS)), "lexical", batch_size=3)
    assert [(r.claim.claim_id, r.similarity, r.kept) for r in first] == [
        (r.claim.claim_id, r.similarity, r.kept) for r in again
    ]
    # ties are broken by claim id
    twins = [nei_claim(f"{i}-N1", "Same words.", "Same words?") for i in (9, 3, 5, 1)]
    assert [r.claim.claim_id for r in rank_nei(twins)] == ["1-N1", "3-N1", "5-N1", "9-N1"]
    assert [r.kept for r in rank_nei(twins)] == [True, False, False, False]


def test_rank_nei_options() -> None:
    by_kind = rank_nei(NEI_CLAIMS, per_category=True)
    kept_by_kind = {c: sum(1 for r in by_kind if r.kept and r.claim.category is c) for c in NeiSubtype}
    assert kept_by_kind == {
        NeiSubtype.OUT_OF_SCHEMA: 1,
        NeiSubtype.COUNTERFACTUAL: 1,
        NeiSubtype.SUBJECTIVE: 1,
    }
    assert sum(r.kept for r in rank_nei(NEI_CLAIMS, fraction=0.5)) == 4
    assert all(r.kept for r in rank_nei(NEI_CLAIMS, fraction=1.0))
    with pytest.raises(ValueError):
        rank_nei(NEI_CLAIMS, fraction=0)

    # a pluggable encoder (tabverify.text.encoders.TextEncoder): texts about seasons on one axis, other
    # questions on another; rows need not be normalised, rank_nei normalises them
    class Axes:
        name = "axes"
        dim = 2

        def __init__(self, rows: int | None = None):
            self.rows = rows

        def encode(self, texts: list[str]) -> np.ndarray:
            if self.rows is not None:
                return np.zeros((self.rows, self.dim))
            return np.array(
                [[1.0, 0.0] if "seasons" in t.lower() or "?" not in t else [0.0, 2.0] for t in texts]
            )

    custom = rank_nei(NEI_CLAIMS, Axes())
    assert custom[0].claim.claim_id == "4-N1" and custom[0].similarity == pytest.approx(1.0)
    with pytest.raises(ValueError, match="one row per text"):
        rank_nei(NEI_CLAIMS, Axes(rows=1))
    with pytest.raises(ValueError, match="unknown encoder"):
        rank_nei(NEI_CLAIMS, "word2vec")


def test_built_claim_record_round_trip_and_claimdb_reader(tmp_path: Path) -> None:
    claim = BuiltClaim("5-C1", "league", Label.REFUTED, None, "The Vipers are from Denver.", "hint", "5",
                       "Where are the Vipers from?", "SELECT city FROM teams", ("city",), (("Fresno",), (float("nan"),)),
                       "gen")  # fmt: skip
    record = claim.to_record()
    assert record["label"] == "CONTRADICTED" and record["category"] is None
    assert record["source_answer"] == {"columns": ["city"], "rows": [["Fresno"], ["nan"]]}
    json.dumps(record, allow_nan=False)
    back = BuiltClaim.from_record(record)
    assert back.claim == claim.claim and back.label is Label.REFUTED and back.rows == (("Fresno",), ("nan",))
    nei = NEI_CLAIMS[0].to_record()
    assert nei["label"] == "NOT ENOUGH INFO" and nei["category"] == "OUT-OF-SCHEMA"
    assert BuiltClaim.from_record(nei).category is NeiSubtype.OUT_OF_SCHEMA
    path = tmp_path / "claims.jsonl"
    path.write_text(json.dumps(record) + "\n" + json.dumps(nei) + "\n", encoding="utf-8")
    claims, problems = read_claims(path)  # the ClaimDB reader accepts the built file
    assert problems == [] and [c.label for c in claims] == [Label.REFUTED, Label.NOT_ENOUGH_INFO]
    assert claims[1].category is NeiSubtype.OUT_OF_SCHEMA


# ---- stages (b) and (c) against a real HTTP chat server ------------------------------------------
# The shared stand-in server (tests/llm_server.py) plays scripted generator and judge models over real
# HTTP; the pipeline talks to it through the real ChatClient.


def client(server: LlmServer, model: str) -> ChatClient:
    return ChatClient(LlmConfig(server.url, model, timeout_s=5.0, max_retries=0, backoff_s=0.0))


def _prompt(request: dict) -> str:
    return request["messages"][-1]["content"]


def scripted_generator(request: dict) -> dict:
    """Claims made from the prompt's question and first answer value; garbage for one question."""
    prompt = _prompt(request)
    question = re.search(r"Question: (.*)", prompt).group(1)  # type: ignore[union-attr]
    value = prompt.split("):\n", 1)[1].splitlines()[1].split(" | ")[0]
    subject = question.rstrip("?")
    if "window" in subject:
        return text("Sorry, I cannot write claims about that.")
    if "ENTAILS" in prompt:
        entailed = [
            f"The figure asked for in {subject} is {value}.",
            f"Indeed {subject} comes out at {value}.",
        ]
        return text(json.dumps({"claims": entailed}))
    if "CONTRADICTS" in prompt:
        claims = [
            f"The figure asked for in {subject} is not {value}.",
            f"The players.team_id of {subject} is 0.",
        ]
        return text("Here you go:\n```json\n" + json.dumps({"claims": claims}) + "\n```")
    return text(json.dumps({"claims": [
        {"category": "OUT-OF-SCHEMA", "claim": f"The coach chose {value} for {subject} because of the weather."},
        {"category": "counterfactual", "claim": f"If the season had been longer, {subject} would differ."},
        {"category": "SUBJECTIVE", "claim": f"The answer {value} to {subject} is the most impressive one."},
        {"category": "ASTROLOGICAL", "claim": f"The stars favoured {subject}."},
    ]}))  # fmt: skip


def _claim_of(request: dict) -> tuple[str, str]:
    prompt = _prompt(request)
    claim = re.search(r"^Claim: (.*)$", prompt, re.M).group(1)  # type: ignore[union-attr]
    label = re.search(r"^Given label: (.*)$", prompt, re.M).group(1)  # type: ignore[union-attr]
    return claim, label


def _keys(request: dict) -> list[str]:
    return re.findall(r"^- (\w+): ", _prompt(request), re.M)


def judge_yes(request: dict) -> dict:
    """Says yes to everything (JSON)."""
    return text(json.dumps({key: "yes" for key in _keys(request)} | {"note": "fine"}))


def judge_strict(request: dict) -> dict:
    """Says no to schema identifiers and to every counterfactual claim's label."""
    claim, label = _claim_of(request)
    answers = {key: True for key in _keys(request)}
    if "team_id" in claim:
        answers["no_schema_leak"] = False
    if "COUNTERFACTUAL" in label:
        answers["label_correct"] = False
    return text("```json\n" + json.dumps(answers) + "\n```")


def judge_garbled(request: dict) -> dict:
    """Answers in ``key: yes`` lines, except garbage about the claims from the 'order' question."""
    claim, _label = _claim_of(request)
    if "question order" in claim:
        return text("¯\\_(ツ)_/¯ no idea")
    return text("\n".join(f"{key}: yes" for key in _keys(request)))


def _pairs_file(tmp_path: Path, ids: tuple[str, ...]) -> Path:
    path = tmp_path / "pairs.jsonl"
    chosen = [p for p in pairs_of() if p.pair_id in ids]
    path.write_text("\n".join(json.dumps({"question_id": p.pair_id, "question": p.question, "SQL": p.sql,
                                          "db_id": p.db_id, "evidence": p.evidence}) for p in chosen) + "\n",
                    encoding="utf-8")  # fmt: skip
    return path


def _down(request: dict) -> Reply:
    return Reply(status=503, body={"error": {"message": "scripted outage"}})


@pytest.fixture
def chat_server() -> Iterator[LlmServer]:
    models = {"gen": scripted_generator, "yes": judge_yes, "strict": judge_strict, "garbled": judge_garbled,
              "down": _down}  # fmt: skip
    with LlmServer(models) as server:  # type: ignore[arg-type]
        yield server


def test_generate_over_http(dbs_dir: Path, chat_server: LlmServer) -> None:
    kept, _ = prefilter([p for p in pairs_of() if p.pair_id in ("count", "window", "max")], dbs_dir)
    schemas = {"league": "teams(id INTEGER PK, name TEXT, city TEXT)\nplayers(...)"}
    seen: list[str] = []
    claims, problems = generate(kept, client(chat_server, "gen"), schemas=schemas,
                                on_pair=lambda k, c, p: seen.append(k.pair.pair_id))  # fmt: skip
    assert seen == ["count", "max", "window"]
    by_id = {c.claim_id: c for c in claims}
    assert list(by_id) == [f"{pid}-{code}" for pid in ("count", "max")
                           for code in ("E1", "E2", "C1", "C2", "N1", "N2", "N3")]  # fmt: skip
    assert by_id["count-E1"].claim == "The figure asked for in question count is 10."
    assert by_id["count-E1"].label is Label.ENTAILED and by_id["count-C2"].label is Label.REFUTED
    assert [by_id[f"max-N{i}"].category for i in (1, 2, 3)] == [
        NeiSubtype.OUT_OF_SCHEMA, NeiSubtype.COUNTERFACTUAL, NeiSubtype.SUBJECTIVE]  # fmt: skip
    first = by_id["count-N1"]
    assert (first.extra_info, first.question, first.rows, first.generator) == ("hint count", "question count?",
                                                                                ((10,),), "gen")  # fmt: skip
    # the garbage replies and the unknown NEI subtype are recorded, not fatal
    assert sorted((p.pair_id, p.kind) for p in problems) == [
        ("count", "nei"), ("max", "nei"), ("window", "contradicted"), ("window", "entailed"), ("window", "nei")]  # fmt: skip
    garbage = next(p for p in problems if p.pair_id == "window" and p.kind == "entailed")
    assert garbage.message == "no claims could be read from the reply" and "Sorry" in garbage.reply
    # E/C requests carry one worked example (a previous turn); NEI requests are zero-shot with the schema
    requests = [r for r in chat_server.chats() if "Question: question count?" in _prompt(r)]
    assert [len(r["messages"]) for r in requests] == [4, 4, 2]
    assert (
        requests[0]["messages"][2]["role"] == "assistant"
        and "Alameda" in requests[0]["messages"][1]["content"]
    )
    assert "teams(id INTEGER PK" in _prompt(requests[2]) and "teams(" not in _prompt(requests[0])
    assert all(r["temperature"] == 0 for r in requests)
    # several workers: the same claims in the same order
    again, _ = generate(kept, client(chat_server, "gen"), schemas=schemas, workers=3)
    assert again == claims
    # a failing server: every request recorded as a failed call
    claims, problems = generate(kept[:1], client(chat_server, "down"), schemas=schemas)
    assert claims == [] and [p.kind for p in problems] == ["entailed", "contradicted", "nei"]
    assert all(p.message.startswith("the model call failed") and "503" in p.message for p in problems)


def test_judge_over_http(dbs_dir: Path, chat_server: LlmServer) -> None:
    kept, _ = prefilter([p for p in pairs_of() if p.pair_id in ("order", "count")], dbs_dir)
    claims, _ = generate(kept, client(chat_server, "gen"))
    panel = [client(chat_server, name) for name in ("yes", "strict", "garbled")]
    results = judge(claims, panel, schemas={"league": "teams(id, name, city)"})
    assert [r.claim for r in results] == claims  # every claim, in order
    verdicts = {r.claim.claim_id: {v.judge: v for v in r.verdicts} for r in results}
    assert all(list(v) == ["yes", "strict", "garbled"] for v in verdicts.values())
    kept_ids = {r.claim.claim_id for r in results if r.kept}
    assert kept_ids == {"count-E1", "count-E2", "count-C1", "count-N1", "count-N3"}
    # the strict judge's "no" answers, recorded per question
    assert verdicts["count-C2"]["strict"].answers == {"label_correct": True, "self_contained": True,
                                                       "no_schema_leak": False}  # fmt: skip
    assert verdicts["count-C2"]["strict"].failed == ("no_schema_leak",)
    assert verdicts["count-N2"]["strict"].failed == ("label_correct",)
    assert set(verdicts["count-N2"]["yes"].answers) == {"label_correct", "self_contained", "subtype_correct",
                                                        "no_schema_leak"}  # fmt: skip
    # the garbled judge: "key: yes" lines read, garbage is an unparseable verdict that drops the claim
    assert verdicts["count-E1"]["garbled"].passed
    garbled = verdicts["order-E1"]["garbled"]
    assert not garbled.passed and garbled.problem == "unparseable verdict" and "no idea" in garbled.reply
    assert verdicts["order-E1"]["yes"].passed and verdicts["order-E1"]["strict"].passed
    # a judge that cannot be reached drops everything, with the error recorded
    down = judge(claims[:2], {"down": client(chat_server, "down")})
    assert not any(r.kept for r in down)
    assert down[0].verdicts[0].problem.startswith("the judge call failed")
    with pytest.raises(ValueError):
        judge(claims, [])


def test_build_end_to_end_over_http(tmp_path: Path, dbs_dir: Path, chat_server: LlmServer) -> None:
    pairs_path = _pairs_file(tmp_path, ("order", "count", "max", "window", "none", "many"))
    out = tmp_path / "out"
    judges = {"yes": client(chat_server, "yes"), "strict": client(chat_server, "strict"),
              "garbled": client(chat_server, "garbled")}  # fmt: skip
    report = build(
        pairs_path, dbs_dir, out, generator=client(chat_server, "gen"), judges=judges, workers=2
    ).to_dict()
    assert report["prefilter"]["kept"] == 4
    assert report["prefilter"]["dropped_by_reason"] == {"no_composition": 1, "too_many_rows": 1}
    assert report["generation"]["claims"] == 21 and report["generation"]["problems"] == 6
    judging = report["judging"]
    assert judging["claims"] == 21 and judging["kept"] == 10
    assert judging["per_judge"]["yes"]["drops"] == 0
    assert judging["per_judge"]["strict"]["drops"] == 6
    assert judging["per_judge"]["strict"]["no_by_question"] == {"label_correct": 3, "no_schema_leak": 3}
    assert judging["per_judge"]["garbled"] == {
        "drops": 7,
        "unparseable": 7,
        "errors": 0,
        "no_by_question": {},
    }
    ranking = report["nei_ranking"]
    assert (ranking["nei_claims"], ranking["kept"], ranking["encoder"]) == (4, 1, "lexical")
    claims, problems = read_claims(out / "claims.jsonl")
    assert (
        problems == [] and len(claims) == report["claims"]["total"] == 6 + 1
    )  # E/C kept + a quarter of 4 NEI
    records = [json.loads(line) for line in (out / "claims.jsonl").read_text(encoding="utf-8").splitlines()]
    nei = [r for r in records if r["label"] == "NOT ENOUGH INFO"]
    assert len(nei) == 1 and nei[0]["similarity"] == ranking["threshold"]
    assert {r["source_id"] for r in records} == {"count", "max"}
    assert all(r["source_sql"] and r["source_answer"]["rows"] for r in records)
    for name in ("prefilter.jsonl", "generated.jsonl", "judged.jsonl", "nei_ranked.jsonl", "report.json"):
        assert (out / name).is_file()
    # resuming makes no request and gives the same files
    count = len(chat_server.chats())
    claims_text = (out / "claims.jsonl").read_text(encoding="utf-8")
    again = build(pairs_path, dbs_dir, out, generator=client(chat_server, "gen"), judges=judges).to_dict()
    assert len(chat_server.chats()) == count and again == report
    assert (out / "claims.jsonl").read_text(encoding="utf-8") == claims_text
    # another judge panel on resume is refused
    with pytest.raises(DatasetError, match="judge stage"):
        build(pairs_path, dbs_dir, out, generator=client(chat_server, "gen"), judges={"yes": judges["yes"]})


def test_failed_calls_stop_the_stage_and_are_retried_on_resume(
    tmp_path: Path, dbs_dir: Path, chat_server: LlmServer
) -> None:
    state = {"down": True}

    def outage(request: dict) -> dict | Reply:
        return _down(request) if state["down"] else scripted_generator(request)

    chat_server.models["outage"] = outage
    kept, _ = prefilter([p for p in pairs_of() if p.pair_id in ("count", "max", "order")], dbs_dir)
    # three failed calls in a row stop generation with one LlmError; no further requests are sent
    before = len(chat_server.chats())
    with pytest.raises(LlmError, match="3 generation calls in a row failed"):
        generate(kept, client(chat_server, "outage"), stop_after_failures=3)
    assert len(chat_server.chats()) - before == 3
    with pytest.raises(LlmError, match="judge down"):
        judge([OTHER] * 5, {"down": client(chat_server, "down")}, stop_after_failures=2)
    with pytest.raises(ValueError):
        generate(kept, client(chat_server, "gen"), stop_after_failures=0)
    # a build during the outage records the failures; the next run generates those pairs again
    pairs_path = _pairs_file(tmp_path, ("count", "max"))
    out = tmp_path / "out"
    first = build(pairs_path, dbs_dir, out, generator=client(chat_server, "outage"), stop_after_failures=None)
    assert first.to_dict()["generation"]["claims"] == 0
    assert first.to_dict()["generation"]["problems_by_kind"]["entailed: the model call failed"] == 2
    state["down"] = False
    second = build(pairs_path, dbs_dir, out, generator=client(chat_server, "outage")).to_dict()
    assert second["generation"]["claims"] == 14 and second["generation"]["problems"] == 2
    assert second["judging"] == {"skipped": "no judges given: the claims are NOT quality-checked"}
    assert second["claims"]["by_label"]["ENTAILED"] == 4
