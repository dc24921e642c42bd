"""Which reader reads a file: the format from its name or first lines, and folders of files.

One module per format: :mod:`~tabverify.coref.conll` (CoNLL-2012), :mod:`~tabverify.coref.conllu`
(CorefUD CoNLL-U), :mod:`~tabverify.coref.json_format` (character offsets, IAHLT) and
:mod:`~tabverify.coref.kibutzr` (morpheme files aligned onto raw texts).
"""

from __future__ import annotations

import os
from pathlib import Path

from tabverify.coref.conll import read_conll
from tabverify.coref.conllu import read_conllu
from tabverify.coref.document import Document
from tabverify.coref.json_format import read_json
from tabverify.coref.kibutzr import read_kibutzr
from tabverify.coref.source import CorefFormatError, read_source

FORMATS = ("conll", "conllu", "json", "kibutzr")


def detect_format(path: Path) -> str:
    """``conll``, ``conllu`` or ``json`` from the name, else from the first lines."""
    name = path.name.lower()
    if name.endswith((".json", ".jsonl")):
        return "json"
    head = read_source(path)[:4000]
    if "#begin document" in head or "# begin document" in head:
        return "conll"  # also KibutzR's .conllu files, which hold CoNLL-2012 blocks
    if name.endswith(".conllu"):
        return "conllu"
    if head.lstrip().startswith(("{", "[")):
        return "json"
    if "Entity=" in head or "# newdoc" in head or "# sent_id" in head:
        return "conllu"
    return "conll"


def _read_file(path: Path, fmt: str, raw_dir: str | Path | None) -> list[Document]:
    fmt = detect_format(path) if fmt == "auto" else fmt
    if fmt == "kibutzr" or (fmt == "conll" and raw_dir is not None):
        return read_kibutzr(path, raw_dir)
    if fmt == "conll":
        return read_conll(path)
    if fmt == "conllu":
        return read_conllu(path)
    if fmt == "json":
        return read_json(path)
    raise CorefFormatError(f"unknown format {fmt!r}; use auto, {', '.join(FORMATS)}")


def folder_files(folder: Path) -> list[Path]:
    """The files of ``folder`` and of its subfolders, in path order (``a.conll`` < ``sub/b.conll``
    by parts, so the order is the same on every system). Hidden files and folders (``.git``) are
    left out, and symbolic links to folders are not followed (no loops).
    """
    found: list[Path] = []
    for root, dirs, files in os.walk(folder, followlinks=False):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        found.extend(Path(root, name) for name in files if not name.startswith("."))
    return sorted(p for p in found if p.is_file())


def read_documents(path: str | Path, fmt: str = "auto", raw_dir: str | Path | None = None) -> list[Document]:
    """Documents of a file, or of every file in a folder and its subfolders (in path order, see
    :func:`folder_files`), in any supported format. Documents are paired by id, not by file name or
    folder, so ``KEY/sub/doc.conll`` pairs with ``RESPONSE/doc.conll``; an id found in two files is
    an error (here, or in :func:`tabverify.coref.score.pair_documents`), never silently merged.

    ``raw_dir`` (KibutzR): a folder of raw texts onto which morpheme-level files are aligned.

    Raises:
        CorefFormatError: a file that cannot be read as the format, an empty folder, or one
            document id given twice with different texts (a repeat with the same text is left to
            :func:`tabverify.coref.score.pair_documents`, which names the side).
    """
    path = Path(path)
    if path.is_dir():
        names = folder_files(path)
        if not names:
            raise CorefFormatError(f"{path}: the folder and its subfolders hold no files")
        documents = [doc for name in names for doc in _read_file(name, fmt, raw_dir)]
    else:
        documents = _read_file(path, fmt, raw_dir)
    texts: dict[str, str] = {}
    for doc in documents:
        if texts.setdefault(doc.doc_id, doc.text) != doc.text:
            raise CorefFormatError(
                f"{path}: document id {doc.doc_id!r} is given twice with different texts; "
                "each document needs its own id"
            )
    return documents
