"""Running the command line as a user does: a real process, real files."""

from __future__ import annotations

import subprocess
import sys


def run(
    *args: str, stdin: str | None = None, timeout: float = 120, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``tabverify ARGS`` in a new process, output captured (``env``: the whole environment, when given)."""
    return subprocess.run(
        [sys.executable, "-m", "tabverify.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        input=stdin,
        env=env,
    )
