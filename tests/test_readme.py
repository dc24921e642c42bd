"""The README's snippets run as written: every ```python block executes, and every `$ tabverify ...`
example prints the first line the README shows."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
PYTHON_BLOCKS = re.findall(r"```python\n(.*?)```", README, flags=re.S)
SHELL_EXAMPLES = re.findall(r"^\$ (tabverify .*)\n(.*)$", README, flags=re.M)


def test_the_readme_has_snippets_to_test() -> None:
    assert len(PYTHON_BLOCKS) >= 3 and len(SHELL_EXAMPLES) >= 2


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=lambda b: b.splitlines()[0][:40])
def test_python_snippet_runs(block: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # snippets may write files; never into the repository
    exec(compile(block, "README.md", "exec"), {"__name__": "readme"})


@pytest.mark.parametrize(("command", "first_line"), SHELL_EXAMPLES, ids=lambda x: x[:40])
def test_shell_example_prints_what_the_readme_shows(command: str, first_line: str) -> None:
    args = shlex.split(command)
    result = subprocess.run(
        [sys.executable, "-m", "tabverify.cli", *args[1:]],
        capture_output=True, text=True, timeout=120, cwd=ROOT, env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    assert result.returncode in (0, 1), result.stderr
    assert result.stdout.splitlines()[0] == first_line
