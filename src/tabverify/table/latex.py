"""LaTeX ``tabular`` environments to :class:`Grid`.

Understands ``\\multicolumn`` (colspan), ``\\multirow`` (rowspan, also negative counts that span
upwards), rules (``\\hline``, ``\\toprule``/``\\midrule``, ``\\cline``, ``\\cmidrule``), comments and
``\\caption`` of the surrounding ``table`` float. Cell text keeps its macros (``\\textbf{70.2}``,
``45.3\\pm0.2``); :func:`tabverify.table.scientific.parse_measurement` reads through them. Rows above the
first ``\\midrule`` (or the first rule after some rows) are header rows. A span larger than
:data:`~tabverify.table.grid.MAX_SPAN` is an error (LaTeX itself would reject it), and a document's
tables expand to at most :data:`~tabverify.table.grid.MAX_GRID_CELLS` cells. A tabular nested in
another's cell (a two-line header) is part of that cell's text, not a table of its own.
"""

from __future__ import annotations

import bisect
import re

from tabverify.errors import TableError
from tabverify.table.grid import MAX_SPAN, CellBudget, Grid, GridCell, check_columns

_BEGIN = re.compile(r"\\begin\{(tabular\*?|tabularx|tabulary|longtable|array)\}")
_RULES = re.compile(
    r"\\(?:hline|toprule|bottomrule|midrule|hdashline|specialrule|addlinespace|endhead|endfirsthead|"
    r"endfoot|endlastfoot|noalign)\b|\\(?:cline|cmidrule|cdashline)(?:\([a-z]*\))?\{[^}]*\}"
)
_MULTI = re.compile(r"^\\multi(column|row)\s*")
_ROW_SPACING = re.compile(r"\[[^\]\n]{0,40}\]")  # the optional [2pt] after \\
_FLOAT_BEGIN = re.compile(r"\\begin\{(?:table|longtable)")
_FLOAT_END = re.compile(r"\\end\{table")
_CAPTION = re.compile(r"\\caption\*?\s*")  # then "{", or an optional [short caption] and "{"
_BRACE_AFTER = re.compile(r"\s*\{")
_BRACE = re.compile(r"[{}]")
_MAX_MULTI = 8  # \multicolumn/\multirow nested in one cell unwrapped; deeper ones are left as written


def _strip_comments(text: str) -> str:
    return re.sub(r"(?<!\\)%[^\n]*", "", text)


def _group(text: str, start: int, stop: int | None = None, name: str = "latex") -> tuple[str, int]:
    """The brace group beginning at ``start`` (which must be '{') and closing before ``stop`` (default:
    the end of the text): its content and the index after. ``name`` (the file and table) begins the
    error message."""
    depth = 0
    for brace in _BRACE.finditer(text, start, len(text) if stop is None else stop):
        i = brace.start()
        ch = text[i]
        if ch == "{" and (i == 0 or text[i - 1] != "\\"):
            depth += 1
        elif ch == "}" and text[i - 1] != "\\":
            depth -= 1
            if depth == 0:
                return text[start + 1 : i], i + 1
    raise TableError(f"{name}: unbalanced braces in the LaTeX table; check the {{ and }} of its cells")


def _skip_space(text: str, i: int) -> int:
    while i < len(text) and text[i].isspace():
        i += 1
    return i


def _split_top(text: str, separator: str) -> list[str]:
    """Split at ``separator`` outside braces and environments (a tabular nested in a cell) and not
    escaped (``\\&``)."""
    parts, depth, last, i = [], 0, 0, 0
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            if text.startswith("\\begin{", i):
                depth += 1  # balanced by the \end{...} below; its own braces count +1 -1
            elif text.startswith("\\end{", i):
                depth -= 1
            elif separator == "\\\\" and text.startswith("\\\\", i) and depth == 0:
                parts.append(text[last:i])
                i += 2
                # an optional spacing argument after \\ : \\[2pt]
                spacing = _ROW_SPACING.match(text, _skip_space(text, i))
                if spacing:
                    i = spacing.end()
                last = i
                continue
            i += 2
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif depth == 0 and separator == "&" and ch == "&":
            parts.append(text[last:i])
            last = i + 1
        i += 1
    parts.append(text[last:])
    return parts


def _multi(cell: str, name: str = "latex") -> tuple[str, int, int]:
    """(text, rowspan, colspan) of a cell, unwrapping ``\\multicolumn``/``\\multirow``.

    At most :data:`_MAX_MULTI` of them nested in one another are unwrapped; deeper ones are left in
    the text as written (each level rereads the rest of the cell, so thousands nested would take
    time growing with the square of the cell).

    Raises:
        TableError: a span larger than :data:`~tabverify.table.grid.MAX_SPAN`.
    """
    rowspan = colspan = 1
    cell = cell.strip()
    for _ in range(_MAX_MULTI):
        m = _MULTI.match(cell)
        if not m:
            break
        i = _skip_space(cell, m.end())
        try:
            # \multirow[vpos]{rows}[bigstruts]{width}[vmove]{text}; \multicolumn{columns}{spec}{text}
            if cell[i : i + 1] == "[":
                i = _skip_space(cell, cell.index("]", i) + 1)
            if cell[i : i + 1] != "{":
                break
            count, i = _group(cell, i, name=name)
            i = _skip_space(cell, i)
            if cell[i : i + 1] == "[":
                i = cell.index("]", i) + 1
            i = _skip_space(cell, i)
            if cell[i : i + 1] == "*":  # \multirow{2}*{text}: the width written unbraced
                i += 1
            else:
                _, i = _group(cell, i, name=name)
            i = _skip_space(cell, i)
            if cell[i : i + 1] == "[":
                i = cell.index("]", i) + 1
                i = _skip_space(cell, i)
            if cell[i : i + 1] == "{":
                content, i = _group(cell, i, name=name)
            else:  # an unbraced argument (\multicolumn{2}{c}\textbf{B}): the rest of the cell
                content, i = cell[i:], len(cell)
        except (TableError, ValueError, IndexError):
            break
        try:
            number = int(count.strip())
        except ValueError:
            number = 1
        if abs(number) > MAX_SPAN:
            raise TableError(
                f"{name}: \\multi{m.group(1)}{{{count.strip()}}} spans more than {MAX_SPAN} "
                f"{m.group(1)}s, the most tabverify accepts; check the count"
            )
        if m.group(1) == "column":
            colspan = max(1, number)
        else:
            rowspan = number or 1
        cell = (content + cell[i:]).strip()
    return cell, rowspan, colspan


def parse_tabular(
    body: str, caption: str = "", name: str = "latex", budget: CellBudget | None = None
) -> Grid:
    """A grid from the body of one ``tabular`` (the text between its column spec and ``\\end``).

    Raises:
        TableError: no rows, a span beyond :data:`~tabverify.table.grid.MAX_SPAN`, or more cells
            than ``budget`` (default: :data:`~tabverify.table.grid.MAX_GRID_CELLS`) allows.
    """
    budget = budget or CellBudget(name)
    body = _strip_comments(body)
    lines = _split_top(body, "\\\\")
    rows: list[list[tuple[str, int, int]]] = []
    header_rows = 0
    rule_seen_after_rows = False
    for line in lines:
        has_mid = bool(re.search(r"\\midrule|\\hline|\\cmidrule|\\cline", line))
        content = _RULES.sub("", line).strip()
        if has_mid and rows and not rule_seen_after_rows:
            # the first rule after some rows closes the header, at the position of the rule
            rule_at = re.search(r"\\midrule|\\hline|\\cmidrule|\\cline", line)
            before = _RULES.sub("", line[: rule_at.start()] if rule_at else "").strip()
            header_rows = len(rows) + (1 if before else 0)
            rule_seen_after_rows = True
        if not content:
            continue
        cells = _split_top(content, "&")
        budget.spend(len(cells))
        rows.append([_multi(_flatten_nested(c), name) for c in cells])
    if not rows:
        raise TableError(f"{name}: the tabular has no rows")
    # LaTeX rows spell out every position (a \\multirow leaves empty cells in the rows it covers),
    # so lay rows out independently, then let each \\multirow fill the empty positions it spans
    width = max(sum(colspan for _, _, colspan in row) for row in rows)
    check_columns(width, name)
    budget.spend(len(rows) * width)
    grid: list[list[GridCell]] = []
    spans: list[tuple[int, int, int, int]] = []
    for i, row in enumerate(rows):
        line: list[GridCell] = []
        for text, rowspan, colspan in row:
            j = len(line)
            cell = GridCell(text, i < header_rows, (i, j))
            line.extend([cell] * colspan)
            if rowspan != 1:
                spans.append((i, j, rowspan, colspan))
        line.extend(GridCell("", i < header_rows, (i, j), filler=True) for j in range(len(line), width))
        grid.append(line)
    for i, j, rowspan, colspan in spans:
        top = i if rowspan > 0 else max(0, i + rowspan + 1)
        bottom = min(len(grid), i + rowspan) if rowspan > 0 else i + 1
        budget.spend((bottom - top) * colspan)
        source = grid[i][j]
        cell = GridCell(source.text, source.header, (top, j))
        for r in range(top, bottom):
            for c in range(j, j + colspan):
                if r == i or not grid[r][c].text.strip():
                    grid[r][c] = GridCell(cell.text, grid[r][c].header, cell.origin)
    cells = [tuple(line) for line in grid]
    return Grid(tuple(cells), caption, name)


def read_latex_tables(tex: str, source: str = "latex", budget: CellBudget | None = None) -> list[Grid]:
    """Every ``tabular`` (also ``tabular*``, ``tabularx``, ``longtable``) of a LaTeX text, in order,
    each with the ``\\caption`` of the ``table`` float around it, named ``SOURCE#tableN`` (from 1).

    Raises:
        TableError: when no tabular is found, one is malformed, or the tables expand to more cells
            than ``budget`` (default: :data:`~tabverify.table.grid.MAX_GRID_CELLS`) allows.
    """
    tex = _strip_comments(tex)
    budget = budget or CellBudget(source)
    floats = _Floats(tex)
    grids: list[Grid] = []
    done = 0  # the end of the last tabular read: a tabular nested in it is one of its cells
    for m in _BEGIN.finditer(tex):
        if m.start() < done:
            continue
        number = len(grids) + 1
        env = m.group(1)
        i = m.end()
        try:
            if env in ("tabular*", "tabularx", "tabulary"):
                _, i = _group(tex, _skip_space(tex, i), name=f"{source}: table {number}")  # width
            i = _skip_space(tex, i)
            if tex[i : i + 1] == "[":
                i = tex.index("]", i) + 1
            i = _skip_space(tex, i)
            if tex[i : i + 1] != "{":
                raise TableError(
                    f"{source}: table {number}: \\begin{{{env}}} has no column spec; write one such as "
                    f"\\begin{{{env}}}{{lcc}}"
                )
            _, i = _group(tex, i, name=f"{source}: table {number}")  # column spec
        except (ValueError, IndexError) as exc:
            raise TableError(f"{source}: table {number}: malformed \\begin{{{env}}}") from exc
        end = _matching_end(tex, i)
        if end == -1:
            raise TableError(f"{source}: table {number}: \\begin{{{env}}} has no \\end{{{env}}}")
        done = end
        grids.append(
            parse_tabular(tex[i:end], floats.caption(m.start(), end), f"{source}#table{number}", budget)
        )
    if not grids:
        raise TableError(f"{source}: no \\begin{{tabular}} found in the LaTeX")
    return grids


_NESTED_BEGIN = re.compile(r"\\begin\{(?:tabular\*?|tabularx|tabulary|array)\}\s*(?:\[[^\]]*\]\s*)?")
_MAX_NESTED = 100  # nested tabulars flattened per cell; more are left as written


def _flatten_nested(cell: str) -> str:
    """A cell with the tabulars nested in it (two-line headers: ``\\begin{tabular}{c}AP\\\\(val)\\end{tabular}``)
    replaced by their text as typeset, lines and cells joined by spaces (``AP (val)``)."""
    for _ in range(_MAX_NESTED):
        begins = list(_NESTED_BEGIN.finditer(cell))
        if not begins or cell[begins[-1].end() : begins[-1].end() + 1] != "{":
            break
        inner = begins[-1]  # the last begin opens the innermost tabular
        try:
            _, body_start = _group(cell, inner.end())  # skip the column spec
        except TableError:
            break
        end = cell.find("\\end{", body_start)
        close = cell.find("}", end) if end >= 0 else -1
        if close < 0:
            break
        lines = re.split(r"\\\\(?:\[[^\]]*\])?|(?<!\\)&", cell[body_start:end])
        cell = cell[: inner.start()] + " ".join(p.strip() for p in lines if p.strip()) + cell[close + 1 :]
    return cell


_TABULAR_TOKEN = re.compile(r"\\(begin|end)\{(?:tabular\*?|tabularx|tabulary|longtable|array)\}")


def _matching_end(tex: str, start: int) -> int:
    """Where the tabular whose body starts at ``start`` ends (its ``\\end``, tabulars nested in its
    cells skipped), or -1."""
    depth = 1
    for token in _TABULAR_TOKEN.finditer(tex, start):
        depth += 1 if token.group(1) == "begin" else -1
        if depth == 0:
            return token.start()
    return -1


def _captions(tex: str) -> list[tuple[int, int]]:
    """Where each ``\\caption``, ``\\caption*`` and ``\\caption[short]`` of a text starts and where its
    ``{`` is (what ``\\\\caption\\*?\\s*(?:\\[[^\\]]*\\])?\\s*\\{`` matches), in time linear in the text.

    That regex looks for the "]" afresh at each ``\\caption[``, so thousands of them with no "]"
    after them would take time growing with the square of the text; here the "]" found (or not) for
    one caption is reused for the ones after it that it also closes.
    """
    found: list[tuple[int, int]] = []
    close_from, close = -1, -1  # the last "]" looked for: from where, and where it is (-1: none)
    brace_for, brace = -1, -1  # the "{" after that "]" (-1: none)
    pos = 0
    while (m := _CAPTION.search(tex, pos)) is not None:
        i = m.end()
        pos = m.start() + 1
        if tex[i : i + 1] == "{":
            found.append((m.start(), i))
            pos = i + 1
            continue
        if tex[i : i + 1] != "[":
            continue
        if close_from < 0 or (i > close and close >= 0):  # no "]" is known at or after i: look
            close_from, close = i, tex.find("]", i + 1)
        if close < 0:
            continue  # no "]" after close_from, so none after i either
        if brace_for != close:
            brace_for = close
            after = _BRACE_AFTER.match(tex, close + 1)
            brace = after.end() - 1 if after else -1
        if brace >= 0:
            found.append((m.start(), brace))
            pos = brace + 1
    return found


class _Floats:
    """Where the ``table`` floats and ``\\caption`` commands of a text are, found once: looking them up
    again for each of thousands of tabulars would take time growing with the square of the text."""

    def __init__(self, tex: str) -> None:
        self.tex = tex
        self.begins = [m.start() for m in _FLOAT_BEGIN.finditer(tex)]
        self.ends = [m.start() for m in _FLOAT_END.finditer(tex)]
        self.captions = _captions(tex)  # (start, its "{")
        self._read: dict[tuple[int, int], str] = {}

    def caption(self, start: int, end: int) -> str:
        """The first ``\\caption`` of the float around the tabular at ``start:end``, or ""."""
        at = bisect.bisect_right(self.begins, start) - 1  # the last float opened before it
        if at < 0:
            return ""
        float_start = self.begins[at]
        after = bisect.bisect_left(self.ends, end)
        float_end = self.ends[after] if after < len(self.ends) else len(self.tex)
        first = bisect.bisect_left(self.captions, (float_start, -1))
        if first == len(self.captions) or self.captions[first][0] >= float_end:
            return ""
        key = (first, float_end)
        if key not in self._read:  # the tabulars of one float share its caption, read once
            try:
                text, _ = _group(self.tex, self.captions[first][1], float_end)
            except TableError:
                text = ""
            self._read[key] = " ".join(text.split())
        return self._read[key]
