"""The exception hierarchy: one base class, one subclass per kind of failure."""

from __future__ import annotations


class TabverifyError(Exception):
    """Base class of every error tabverify raises on purpose.

    Messages name the input, say what is wrong and, where possible, what to do.
    """


class TableError(TabverifyError):
    """A table file or object could not be read (empty, ragged, binary, wrong encoding...)."""


class TableSizeError(TableError):
    """A document or table is larger than tabverify reads (the grid and table size limits)."""


class TimeLimitError(TabverifyError):
    """A run took longer than its time limit (``crosscheck --timeout``) and was stopped."""


class ProgramSyntaxError(TabverifyError):
    """A program in the TabFact brace syntax could not be parsed."""


class ProgramTypeError(TabverifyError):
    """A program is well-formed but calls a function with arguments of the wrong type."""


class ProgramExecutionError(TabverifyError):
    """A program failed while running on a table (unknown column, empty view, non-numeric column...)."""


class DatasetError(TabverifyError):
    """A benchmark data folder is missing or does not have the expected layout."""


class ModelError(TabverifyError):
    """A trained model (ranker weights) is missing or unreadable."""


class DatabaseError(TabverifyError):
    """A database could not be opened or read (missing or corrupt file, unknown table, unreachable
    server, a query that failed)."""


class UnsafeQueryError(DatabaseError):
    """A query was refused because it could change data or settings, read files, or is not exactly
    one read-only statement."""


class LlmError(TabverifyError):
    """A model server could not be used: unreachable, refused the request, unknown model, or kept
    answering with something that is not a chat completion."""


class LakeError(TabverifyError):
    """A table lake could not be opened or written: not a lake, corrupt, built with another encoder
    or version, or locked by another index run."""
