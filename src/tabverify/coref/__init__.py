"""Coreference scoring with mentions that can sit inside words (Hebrew), exact to the reference
scorers on the classic formats, and a Hebrew resolver (:func:`resolve`: raw text to a
:class:`Document` of character-span mentions)."""

from tabverify.coref.align import MATCH_MODES, align_mentions
from tabverify.coref.document import Document, Mention
from tabverify.coref.formats import read_documents
from tabverify.coref.json_format import write_json
from tabverify.coref.metrics import Counts, Score
from tabverify.coref.resolver.pipeline import resolve
from tabverify.coref.score import CorefResult, score
from tabverify.coref.source import CorefFormatError

__all__ = [
    "MATCH_MODES", "CorefFormatError", "CorefResult", "Counts", "Document", "Mention", "Score",
    "align_mentions", "read_documents", "resolve", "score", "write_json",
]  # fmt: skip
