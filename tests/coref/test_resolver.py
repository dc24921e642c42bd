"""The Hebrew coreference resolver: KibutzR reading, document building, shipped models, CLI round trip."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tabverify.cli import app
from tabverify.coref.resolver.data import Token, read_document
from tabverify.coref.resolver.links import MAX_FAR, WINDOW, describe_all, pair_features, pair_rows
from tabverify.coref.resolver.mentions import candidates
from tabverify.coref.resolver.pipeline import build_document, resolve_file
from tabverify.text.spans import Span

runner = CliRunner()

# "Dani bought a new car. His car (the car of-him) is red. He drives in it every day."
KIBUTZR = """#begin document 7
דני\t0\t0\t_\t(0)
קנה\t0\t1\t_\t_
מכונית\t0\t2\t_\t(1
חדשה\t0\t3\t_\t1)
.\t0\t4\t_\t_

ה\t1\t0\t_\t(1
מכונית\t1\t1\t_\t_
_של_\t1\t2\t_\t_
_הוא\t1\t3\t_\t(0)|1)
אדומה\t1\t4\t_\t_
.\t1\t5\t_\t_

הוא\t2\t0\t_\t(0)
נוסע\t2\t1\t_\t_
ב\t2\t2\t_\t_
ה_\t2\t3\t_\t(1
מכונית\t2\t4\t_\t1)
.\t2\t5\t_\t_
#end document
"""


@pytest.fixture
def kibutzr_file(tmp_path: Path) -> Path:
    path = tmp_path / "htb:7.conllu"
    path.write_text(KIBUTZR, encoding="utf-8")
    return path


def test_kibutzr_kinds_and_clusters(kibutzr_file: Path) -> None:
    doc = read_document(kibutzr_file)
    kinds = {t.form: t.kind for t in doc.tokens}
    assert kinds["_הוא"] == "suffix" and kinds["_של_"] == "suffix"
    assert kinds["ה_"] == "article" and kinds["ב"] == "prefix" and kinds["."] == "punct"
    assert doc.clusters == (((0, 0), (8, 8), (11, 11)), ((2, 3), (5, 8), (14, 15)))
    assert [t.sentence for t in doc.tokens][:6] == [0, 0, 0, 0, 0, 1]


def test_candidates_never_start_or_end_on_a_marker_or_prefix(kibutzr_file: Path) -> None:
    tokens = read_document(kibutzr_file).tokens
    spans = candidates(tokens)
    assert (8, 8) in spans and (5, 8) in spans and (14, 15) in spans
    assert all(tokens[a].kind != "prefix" and tokens[b].kind in ("stem", "suffix") for a, b in spans)
    assert not any(tokens[a].form == "_של_" or tokens[b].form == "_של_" for a, b in spans)
    assert all(tokens[a].sentence == tokens[b].sentence for a, b in spans)


def test_link_features_mark_an_anaphor_contained_in_its_antecedent(kibutzr_file: Path) -> None:
    tokens = read_document(kibutzr_file).tokens
    new_car, the_car, dani = describe_all(tokens, [(2, 3), (14, 15), (0, 0)])
    # "the car" (ה_ מכונית, 2 sentences on) after "a new car": its stems are all in the antecedent's
    assert "contained|def=True|sent=2" in pair_features(tokens, new_car, the_car, 0, (0, 0))
    # not the other way round, and not for an unrelated mention
    assert not any(f.startswith("contained") for f in pair_features(tokens, the_car, new_car, 0, (0, 0)))
    assert not any(f.startswith("contained") for f in pair_features(tokens, dani, the_car, 0, (0, 0)))


def test_build_document_anchors_unwritten_morphemes() -> None:
    text = "בבית שלו"  # ב + ה_ + בית ; של + _הוא
    spans = [Span(0, 1), None, Span(1, 4), Span(5, 7), Span(7, 8)]
    doc = build_document("d", text, spans, [[(1, 1), (1, 2)], [(4, 4)]])
    first, second = doc.entities
    assert [(m.start, m.end) for m in first] == [(0, 1), (1, 4)]  # ה_ alone sits on the ב before it
    assert (second[0].start, second[0].end, second[0].kind) == (7, 8, "subword")
    assert second[0].subkind == "embedded_pronoun"


def test_shipped_models_link_a_suffix_pronoun(kibutzr_file: Path) -> None:
    (doc,) = resolve_file(kibutzr_file)
    suffix = doc.text.index("_הוא")
    pronoun = doc.text.index("הוא נוסע")
    entity = next(e for e in doc.entities if any(m.start == suffix for m in e))
    assert any(m.start == pronoun for m in entity)


def test_cli_resolve_then_score(kibutzr_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "system.json"
    result = runner.invoke(app, ["coref", "resolve", str(kibutzr_file), "--out", str(out)])
    assert result.exit_code == 0, result.output
    record = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    assert record["doc_id"] == "7" and record["clusters"]
    scored = runner.invoke(
        app, ["coref", "score", str(kibutzr_file), str(out), "--match", "overlap", "--json"]
    )
    assert scored.exit_code == 0, scored.output
    assert json.loads(scored.stdout)["metrics"]["muc"]["f1"] > 0
    conllu = tmp_path / "system.conllu"
    written = runner.invoke(
        app, ["coref", "resolve", str(kibutzr_file), "--out", str(conllu), "--format", "conllu"]
    )
    assert written.exit_code == 0, written.output
    assert "Entity=" in conllu.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("content", "args", "message"),
    [
        ('{"doc_id": "a"}\n{"doc_id": "b"}\n', [], '"text"'),
        ("שלום", ["--format", "xml"], "--format"),
        ('{"doc_id": "a", "text": "דני"}\n{"doc_id": "a", "text": "הוא"}\n', [], "repeats the doc_id 'a'"),
        ('{"doc_id": 1, "text": "x", "n": ' + "9" * 5000 + "}\n", [], "more than 4,300 digits"),
        ('{"doc_id": "long", "text": "' + "בית " * 25_001 + '"}\n', [], "at most 100,000"),
    ],
)
def test_cli_bad_input_exits_2(tmp_path: Path, content: str, args: list[str], message: str) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text(content, encoding="utf-8")
    result = runner.invoke(app, ["coref", "resolve", str(source), "--out", str(tmp_path / "o.json"), *args])
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output


def test_kibutzr_input_longer_than_the_cap_is_refused_before_resolving(tmp_path: Path) -> None:
    """A morpheme file skips segmentation but not the length cap (30,000 morphemes took 118 s and
    1.5 GB before it was checked)."""
    rows = [f"בית\t{i // 20}\t{i % 20}\t_\t_" + ("\n" if i % 20 == 19 else "") for i in range(30_000)]
    source = tmp_path / "big.conll"
    source.write_text("#begin document big\n" + "\n".join(rows) + "\n#end document\n", encoding="utf-8")
    result = runner.invoke(app, ["coref", "resolve", str(source), "--out", str(tmp_path / "o.json")])
    assert (
        result.exit_code == 2 and "119,999 characters" in result.output and "at most 100,000" in result.output
    )
    assert not (tmp_path / "o.json").exists()


def test_a_lone_surrogate_escape_in_the_input_is_written_back_as_the_same_escape(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text('{"doc_id": "a", "text": "\\ud800 דני ראה את אחיו"}\n', encoding="utf-8")
    out = tmp_path / "o.jsonl"
    result = runner.invoke(app, ["coref", "resolve", str(source), "--out", str(out)])
    assert result.exit_code == 0, result.output
    written = out.read_text(encoding="utf-8")
    assert '"\\ud800 דני' in written and json.loads(written)["text"] == "\ud800 דני ראה את אחיו"


def test_cli_missing_input_and_bad_bench_data(tmp_path: Path) -> None:
    missing = runner.invoke(
        app, ["coref", "resolve", str(tmp_path / "none.txt"), "--out", str(tmp_path / "o")]
    )
    assert missing.exit_code == 2 and "no such file" in missing.output
    bench = runner.invoke(app, ["bench", "coref", "--data", str(tmp_path)])
    assert bench.exit_code == 2 and "KibutzR" in bench.output
    test_split = runner.invoke(app, ["bench", "coref", "--data", str(tmp_path), "--split", "test"])
    assert test_split.exit_code == 2


def test_raw_text_links_an_embedded_pronoun(tmp_path: Path) -> None:
    from tabverify.coref.resolver.pipeline import resolve

    text = "דני קנה מכונית חדשה. הוא אוהב אותה מאוד."
    doc = resolve(text)
    suffix = text.index("אותה") + 3  # the ה of אותה is _היא, "her"
    car = text.index("מכונית")
    entity = next(e for e in doc.entities if any((m.start, m.end) == (suffix, suffix + 1) for m in e))
    assert any(m.start == car for m in entity)
    assert next(m for m in entity if m.start == suffix).subkind == "embedded_pronoun"


def test_cli_hostile_texts(tmp_path: Path) -> None:
    empty, english, long = tmp_path / "empty.txt", tmp_path / "english.txt", tmp_path / "long.txt"
    empty.write_text("", encoding="utf-8")
    english.write_text("The cat sat. It slept.", encoding="utf-8")
    long.write_text("דני הלך הביתה. " * 20_000, encoding="utf-8")
    out = tmp_path / "o.json"
    result = runner.invoke(app, ["coref", "resolve", str(empty), "--out", str(out)])
    assert result.exit_code == 0 and json.loads(out.read_text(encoding="utf-8"))["clusters"] == []
    result = runner.invoke(app, ["coref", "resolve", str(english), "--out", str(out)])
    assert result.exit_code == 0 and "no Hebrew letters" in result.output
    result = runner.invoke(app, ["coref", "resolve", str(long), "--out", str(out)])
    assert result.exit_code == 2 and "at most 100,000" in result.output


def test_a_text_repeating_one_head_offers_a_bounded_number_of_antecedents() -> None:
    # 2,000 mentions of one head: each is offered the previous WINDOW mentions and at most MAX_FAR
    # earlier ones, not all of them (the pairs once grew with the square of the text and a long
    # repetitive text ran out of memory)

    tokens = [Token("דני", "stem", i) for i in range(2_000)]
    infos = describe_all(tokens, [(i, i) for i in range(2_000)])
    pairs, rows = pair_rows(tokens, infos)
    assert len(pairs) == len(rows) <= 2_000 * (WINDOW + MAX_FAR)
    far = [(j, i) for j, i in pairs if j < i - WINDOW]
    assert far and all(i - j <= WINDOW + MAX_FAR for j, i in far)  # the most recent ones
