"""One HTML table written to disk, as the crosscheck tests read their targets and sources."""

from __future__ import annotations

from html import escape
from pathlib import Path


def write(tmp_path: Path, name: str, rows: list[list[str]], caption: str = "", header_rows: int = 1) -> Path:
    """An HTML document holding one table whose first ``header_rows`` rows are header cells."""

    def row(cells: list[str], tag: str) -> str:
        return "<tr>" + "".join(f"<{tag}>{escape(c)}</{tag}>" for c in cells) + "</tr>"

    head = "".join(row(r, "th") for r in rows[:header_rows])
    body = "".join(row(r, "td") for r in rows[header_rows:])
    path = tmp_path / name
    path.write_text(
        f"<html><body><table><caption>{escape(caption)}</caption><thead>{head}</thead>"
        f"<tbody>{body}</tbody></table></body></html>",
        encoding="utf-8",
    )
    return path
