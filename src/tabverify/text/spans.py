"""Character spans: the one offset type shared by entity linking and coreference."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, order=True)
class Span:
    """A half-open range ``[start, end)`` of character offsets into a text."""

    start: int
    end: int

    def __post_init__(self) -> None:
        if self.start < 0 or self.end < self.start:
            raise ValueError(f"invalid span [{self.start}, {self.end}): need 0 <= start <= end")

    def __len__(self) -> int:
        return self.end - self.start

    def of(self, text: str) -> str:
        """The part of ``text`` this span covers."""
        return text[self.start : self.end]

    def overlaps(self, other: Span) -> bool:
        """True when the spans share at least one character."""
        return self.start < other.end and other.start < self.end

    def contains(self, other: Span) -> bool:
        """True when ``other`` lies inside this span."""
        return self.start <= other.start and other.end <= self.end
