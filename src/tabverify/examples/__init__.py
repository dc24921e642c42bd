"""Small example files shipped with tabverify (a table, a paper and its cited source, coreference
documents), so the README's commands and snippets run as written after an install."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from tabverify.errors import TabverifyError


def example(name: str) -> Path:
    """The path of a shipped example file, e.g. ``example("league.csv")``.

    Raises:
        TabverifyError: no example has that name (the message lists those that exist).
    """
    folder = Path(str(resources.files(__name__)))
    path = folder / name
    if not path.is_file() or name.startswith(("_", ".")) or path.suffix == ".py":
        names = sorted(p.name for p in folder.iterdir() if p.is_file() and p.suffix != ".py")
        raise TabverifyError(f"no example named {name!r}; the examples are: {', '.join(names)}")
    return path
