"""Sparse, bounded alignment: the candidate index finds exactly the overlapping mentions, nearest
first; 20,000 mutually overlapping mentions score in modest memory; and the package keeps one
obvious place for each thing (no import cycle, no private names across modules)."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tabverify.coref import Mention
from tabverify.coref.align import NearIndex, candidate_pairs

spans = st.tuples(st.integers(0, 25), st.integers(1, 8)).map(lambda se: Mention.of(se[0], se[0] + se[1]))


@settings(max_examples=300, deadline=None)
@given(st.lists(spans, max_size=25), spans, st.booleans())
def test_near_lists_exactly_the_overlapping_mentions_nearest_first(
    mentions: list[Mention], key: Mention, inside: bool
) -> None:
    found = list(NearIndex(mentions).near(key.start, key.end, inside))
    if inside:
        expected = {j for j, m in enumerate(mentions) if key.start <= m.start and m.end <= key.end}
    else:
        expected = {j for j, m in enumerate(mentions) if m.start < key.end and key.start < m.end}
    assert sorted(found) == sorted(expected)  # each once, none missing
    distances = [abs(mentions[j].start - key.start) + abs(mentions[j].end - key.end) for j in found]
    assert distances == sorted(distances)


@settings(max_examples=100, deadline=None)
@given(st.lists(spans, max_size=15), st.lists(spans, max_size=15))
def test_candidates_are_all_positive_pairs_when_nothing_is_cut(
    keys: list[Mention], responses: list[Mention]
) -> None:
    def shared(a: Mention, b: Mention) -> float:
        return float(a.overlap(b))

    weights, cut = candidate_pairs(keys, responses, shared)
    expected = {
        (i, j): shared(k, r) for i, k in enumerate(keys) for j, r in enumerate(responses) if shared(k, r) > 0
    }
    assert cut == 0 and weights == expected


SCALE = textwrap.dedent(
    """
    import resource, json
    from tabverify.coref import Document, Mention, score
    n = 20_000
    text = "x" * (n + 10)
    # every key mention contains character 0 and every response mention character 1: all of them
    # overlap each other; entities of 10 (key) and 7 (response) mentions entangle CEAF's groups
    key = [Mention.of(0, i + 1) for i in range(n)]
    response = [Mention.of(1, i + 2) for i in range(n)]
    k = Document("d", text, tuple(tuple(key[i : i + 10]) for i in range(0, n, 10)))
    r = Document("d", text, tuple(tuple(response[i : i + 7]) for i in range(0, n, 7)))
    result = score([k], [r], match="overlap")
    # VmHWM is this program's own peak: ru_maxrss would carry over the peak of the process that forked
    # it (a pytest process that loaded a sentence encoder earlier is over 1 GB)
    peak = [line for line in open("/proc/self/status") if line.startswith("VmHWM:")]
    rss = int(peak[0].split()[1]) / 1024 if peak else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"rss_mb": rss,
                      "aligned": result.mentions["aligned"].recall, "ceafe": result.metrics["ceafe"].f1,
                      "warnings": list(result.warnings)}))
    """
)


def test_twenty_thousand_mutually_overlapping_mentions_score_in_modest_memory() -> None:
    import json

    done = subprocess.run(
        [sys.executable, "-c", SCALE], capture_output=True, text=True, timeout=900, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    # a dense 20,000 x 20,000 matrix alone would take gigabytes
    assert report["rss_mb"] < 600, report
    assert report["aligned"] > 0.99 and 0.0 < report["ceafe"] <= 1.0
    # the bounds that cut the candidate search are said, not silent
    assert any("candidate partners" in w for w in report["warnings"])


COREF = Path(__file__).resolve().parents[2] / "src" / "tabverify" / "coref"


def imports(path: Path) -> list[tuple[str, list[str]]]:
    """(module, names) of the package-level imports of a module (not those inside functions)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        (node.module or "", [a.name for a in node.names])
        for node in tree.body
        if isinstance(node, ast.ImportFrom)
    ]


def test_no_private_names_cross_module_boundaries() -> None:
    for path in COREF.glob("*.py"):
        for module, names in imports(path):
            if module.startswith("tabverify"):
                assert not [n for n in names if n.startswith("_")], (path.name, module, names)


def test_the_coref_modules_import_without_a_cycle() -> None:
    graph = {
        path.stem: {m.rsplit(".", 1)[-1] for m, _ in imports(path) if m.startswith("tabverify.coref.")}
        for path in COREF.glob("*.py")
        if path.stem != "__init__"
    }
    visiting: set[str] = set()
    done: set[str] = set()

    def visit(node: str, trail: tuple[str, ...]) -> None:
        assert node not in visiting, f"import cycle: {' -> '.join(trail + (node,))}"
        if node in done:
            return
        visiting.add(node)
        for nxt in graph.get(node, ()):
            visit(nxt, trail + (node,))
        visiting.discard(node)
        done.add(node)

    for node in graph:
        visit(node, ())
    # and nothing imports inside a function to dodge one
    for path in COREF.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        nested = [n for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) for n in ast.walk(f)
                  if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("tabverify.coref")]  # fmt: skip
        assert not nested, path.name
