"""A cited paper (LaTeX) and a citing paper (HTML) that copies some of its numbers, written to disk."""

from __future__ import annotations

from pathlib import Path

import pytest

SOURCE_TEX = r"""
\documentclass{article}
\begin{document}
\begin{table}[t]
\caption{Ablation of the neck.}
\begin{tabular}{lcc}
\toprule
Neck & AP & FPS \\
\midrule
FPN & 40.1 & 21.0 \\
PAN & 40.9 & 19.2 \\
\bottomrule
\end{tabular}
\end{table}

\begin{table}[t]
\caption{Detection results on COCO val2017.}
\begin{tabular}{lccc}
\toprule
Method & AP & AP$_{50}$ & Params (M) \\
\midrule
ResNet-50 & 38.2 & 58.1 & 25.6 \\
Swin-T & \textbf{43.7} & 66.6 & 28.3 \\
ConvNeXt-T & 44.2 & 66.6 & 28.6 \\
Ours & $45.1\pm0.2$ & 67.3 & 30.1 \\
\bottomrule
\end{tabular}
\end{table}
\end{document}
"""

TARGET_ROWS = [
    ("ResNet-50 [12]", "38.2", "58.1", "26M"),  # params rounded: fine
    ("Swin-T [30]", "43.7", "66.6", "28M"),
    ("ConvNeXt-T [31]", "44.2", "66.9", "29M"),  # 66.9: a typo of 66.6
    ("NewNet (ours)", "47.0", "69.1", "31M"),  # the citing paper's own numbers
]


def target_html(
    rows: list[tuple[str, str, str, str]] = TARGET_ROWS, headers: tuple[str, str] = ("AP", "AP50")
) -> str:
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return (
        "<html><body><p>Some text.</p><table><caption>Table 3: Comparison on COCO.</caption><thead>"
        '<tr><th rowspan="2">Model</th><th colspan="2">COCO</th><th rowspan="2">Params</th></tr>'
        f"<tr><th>{headers[0]}</th><th>{headers[1]}</th></tr></thead><tbody>{body}</tbody></table></body></html>"
    )


@pytest.fixture
def source_path(tmp_path: Path) -> Path:
    path = tmp_path / "cited.tex"
    path.write_text(SOURCE_TEX, encoding="utf-8")
    return path


@pytest.fixture
def target_path(tmp_path: Path) -> Path:
    path = tmp_path / "paper.html"
    path.write_text(target_html(), encoding="utf-8")
    return path


@pytest.fixture
def clean_target_path(tmp_path: Path) -> Path:
    path = tmp_path / "clean.html"
    rows = [
        r if not r[0].startswith("ConvNeXt") else ("ConvNeXt-T [31]", "44.2", "66.6", "29M")
        for r in TARGET_ROWS
    ]
    path.write_text(target_html(rows), encoding="utf-8")
    return path


@pytest.fixture
def unrelated_path(tmp_path: Path) -> Path:
    path = tmp_path / "unrelated.md"
    path.write_text("| Dataset | Images |\n|---|---|\n| A | 1200 |\n| B | 530 |\n", encoding="utf-8")
    return path
