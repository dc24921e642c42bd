"""Uploaded files of the crosscheck and coref routes: a name for messages and the bytes, decoded in
a worker as UTF-8 text, and - for readers that only read files - written under generated names into a
temporary folder that is removed afterwards. An uploaded name is shown (escaped), never used as a path.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

from starlette.datastructures import UploadFile

from tabverify.errors import TabverifyError
from tabverify.server.limits import ApiError

Upload = tuple[str, bytes]
"""An uploaded file as the workers get it: its name (for messages and reports) and its bytes."""

MAX_NAME_CHARS = 200
"""An uploaded file's name is cut to this many characters (it only labels the file)."""

SAFE_SUFFIXES = frozenset({".conll", ".conllu", ".json", ".jsonl", ".txt", ".tsv", ".csv"})
"""Suffixes a temporary copy keeps (the coreference readers detect formats by them)."""


async def read_upload(upload: UploadFile | str | None, field: str) -> Upload:
    """The name and bytes of the form field ``field`` (the body is already bounded by the server's
    upload limit).

    Raises:
        ApiError: 400 when the field holds no file or an empty one.
    """
    if not isinstance(upload, UploadFile):
        raise ApiError(400, f"{field}: choose a file to upload")
    name = " ".join((upload.filename or field).split())[:MAX_NAME_CHARS] or field
    data = await upload.read()
    if not data.strip():
        raise ApiError(400, f"{name}: the uploaded file is empty")
    return name, data


def upload_text(upload: Upload, error: type[TabverifyError]) -> str:
    """The upload as text: UTF-8 (a byte order mark dropped), with no NUL bytes.

    Raises:
        error: the bytes are binary or not UTF-8 (a TabverifyError subclass: it pickles back from a worker).
    """
    name, data = upload
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise error(f"{name}: is UTF-16 (or UTF-32) text; save it as UTF-8 and upload it again")
    if b"\x00" in data[:4096]:
        raise error(f"{name}: looks like a binary file (NUL bytes); upload a text file")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise error(f"{name}: not valid UTF-8 (byte {exc.start}); upload UTF-8 text") from None
    if not text.strip():
        raise error(f"{name}: the uploaded file is empty")
    return text


def safe_name(name: str) -> str:
    """A file name for a temporary copy of an upload named ``name``: its stem with every character
    but letters, digits, ``_``, ``-`` and ``:`` replaced by ``_`` (no separators, no leading dot, so
    never a path), plus its suffix when the suffix is one of :data:`SAFE_SUFFIXES`. The stem is kept
    because coreference readers name documents after it (CoNLL-U without ``# newdoc``)."""
    path = Path(name.replace("\\", "/")).name
    suffix = Path(path).suffix.lower()
    stem = path[: -len(suffix)] if suffix else path
    stem = re.sub(r"[^\w:-]", "_", stem)[:100] or "upload"
    return stem + (suffix if suffix in SAFE_SUFFIXES else "")


KILL_GRACE_S = 5.0
"""A worker stopped at the time limit is gone within this time; its scratch folder is removed again
then, in case it wrote after the first removal."""


@asynccontextmanager
async def scratch_folder() -> AsyncIterator[str]:
    """A temporary folder for one request's uploads, made and removed by the server process - not
    by the worker, which may be killed at the time limit before it could clean up."""
    folder = tempfile.mkdtemp(prefix="tabverify-upload-")
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        asyncio.get_running_loop().call_later(KILL_GRACE_S, shutil.rmtree, folder, True)


@contextmanager
def saved(
    uploads: dict[str, Upload | list[Upload]], error: type[TabverifyError], folder: str
) -> Iterator[dict[str, Path]]:
    """Write each upload as UTF-8 text to ``FOLDER/ROLE/<safe name>`` and yield role -> its path; a
    role given a list of uploads (KibutzR raw texts) yields its folder. ``folder`` is an empty
    :func:`scratch_folder` (its owner removes it); an error raised inside names the upload, not its
    temporary path.

    Raises:
        error: an upload that is not UTF-8 text, or two uploads of one role with the same safe name.
    """
    paths: dict[str, Path] = {}
    names: dict[str, str] = {}  # temporary path -> the upload's name, for messages
    for role, given in uploads.items():
        (Path(folder) / role).mkdir()
        for upload in given if isinstance(given, list) else [given]:
            path = Path(folder) / role / safe_name(upload[0])
            if path.exists():
                raise error(f"{upload[0]}: two {role} files are named {path.name}; rename one")
            path.write_text(upload_text(upload, error), encoding="utf-8")
            names[str(path)] = upload[0]
            paths[role] = path
        if isinstance(given, list):
            paths[role] = Path(folder) / role
    try:
        yield paths
    except TabverifyError as exc:
        message = str(exc)
        for path, name in sorted(names.items(), key=lambda item: -len(item[0])):
            message = message.replace(path, name)
        raise type(exc)(message.replace(folder, "…")) from None
