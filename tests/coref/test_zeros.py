"""``keep_zeros=False`` (``--drop-zeros``) removes zero mentions (headed by an empty node) from key
and response, after the singletons, as the CorefUD scorer does."""

from __future__ import annotations

from pathlib import Path

import pytest

from tabverify.coref import read_documents, score

HEADER = "# newdoc id = d\n# global.Entity = eid-etype-head-other\n# sent_id = 1\n"


def conllu(rows: list[tuple[str, str]]) -> str:
    """Token lines from (ID, Entity) pairs; an ID with a dot is an empty node."""
    lines = []
    for token_id, entity in rows:
        head, deps = ("_", "2:nsubj") if "." in token_id else ("0", "_")
        misc = f"Entity={entity}" if entity else "_"
        lines.append(f"{token_id}\tw{token_id}\t_\t_\t_\t_\t{head}\t_\t{deps}\t{misc}")
    return HEADER + "\n".join(lines) + "\n\n"


def run(
    tmp_path: Path, key: list[tuple[str, str]], response: list[tuple[str, str]], **options: object
) -> dict[str, float]:
    (tmp_path / "k.conllu").write_text(conllu(key), encoding="utf-8")
    (tmp_path / "r.conllu").write_text(conllu(response), encoding="utf-8")
    result = score(read_documents(tmp_path / "k.conllu"), read_documents(tmp_path / "r.conllu"), **options)  # type: ignore[arg-type]
    return {name: m.recall for name, m in result.metrics.items()} | {
        f"{name}_p": m.precision for name, m in result.metrics.items()
    }


# key: e1 = {w1, zero 2.1, w3}; e2 = {w4, w5}
KEY = [
    ("1", "(e1-x-1-)"),
    ("2", ""),
    ("2.1", "(e1-x-1-)"),
    ("3", "(e1-x-1-)"),
    ("4", "(e2-x-1-)"),
    ("5", "(e2-x-1-)"),
]


def test_a_zero_the_response_misses_costs_nothing_once_zeros_are_dropped(tmp_path: Path) -> None:
    response = [row for row in KEY if row[0] != "2.1"]  # the same without the empty node
    kept = run(tmp_path, KEY, response)
    # with the zero: e1's links w1-zero-w3 are 2, the response has 1 of them: MUC recall (1+1)/3
    assert kept["muc"] == pytest.approx(2 / 3) and kept["muc_p"] == 1.0
    dropped = run(tmp_path, KEY, response, keep_zeros=False)
    assert all(value == 1.0 for value in dropped.values()), dropped


def test_a_spurious_zero_costs_nothing_once_zeros_are_dropped(tmp_path: Path) -> None:
    key = [row for row in KEY if row[0] != "2.1"]
    kept = run(tmp_path, key, KEY)
    assert kept["muc_p"] == pytest.approx(2 / 3)  # the response's extra zero link
    assert all(value == 1.0 for value in run(tmp_path, key, KEY, keep_zeros=False).values())


def test_an_entity_of_zeros_only_disappears(tmp_path: Path) -> None:
    # key e3 = {zero 2.1} alone; the response has no zero at all
    key = [("1", "(e1-x-1-)"), ("2", ""), ("2.1", "(e3-x-1-)"), ("3", "(e1-x-1-)")]
    response = [("1", "(e1-x-1-)"), ("2", ""), ("3", "(e1-x-1-)")]
    # kept: CEAF-e recall 1 of 2 key entities ({w1, w3} found, {zero} not)
    assert run(tmp_path, key, response)["ceafe"] == pytest.approx(1 / 2)
    # dropped: e3 is empty and is no entity at all (the reference scorer would divide by its size)
    assert all(value == 1.0 for value in run(tmp_path, key, response, keep_zeros=False).values())


def test_singletons_go_before_zeros(tmp_path: Path) -> None:
    # key e1 = {zero 2.1, w3}, e2 = {w4, w5}; response e1 = {w3} alone, e2 = {w4, w5}
    key = [
        ("1", ""),
        ("2", ""),
        ("2.1", "(e1-x-1-)"),
        ("3", "(e1-x-1-)"),
        ("4", "(e2-x-1-)"),
        ("5", "(e2-x-1-)"),
    ]
    response = [("1", ""), ("2", ""), ("3", "(e1-x-1-)"), ("4", "(e2-x-1-)"), ("5", "(e2-x-1-)")]
    got = run(tmp_path, key, response, keep_singletons=False, keep_zeros=False)
    # singletons first: the key's e1 has two mentions and stays, then loses its zero -> {w3};
    # the response's {w3} is a singleton and goes. B3 recall: {w3} 0 + {w4, w5} 2 -> 2/3;
    # precision 2/2. (Zeros first would have dropped the key's {w3} too: recall 1.)
    assert (got["b_cubed"], got["b_cubed_p"]) == pytest.approx((2 / 3, 1.0))


def test_the_options_line_says_what_happened(tmp_path: Path) -> None:
    (tmp_path / "k.conllu").write_text(conllu(KEY), encoding="utf-8")
    docs = read_documents(tmp_path / "k.conllu")
    assert score(docs, docs, keep_zeros=False).options["zeros"] == "removed"
    assert score(docs, docs).options["zeros"] == "kept, matched linear"
