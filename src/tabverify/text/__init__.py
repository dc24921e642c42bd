"""Text: character spans, tokens and stems, entity linking to table cells."""

from tabverify.text.linking import Link, Linking, link
from tabverify.text.normalize import Token, stem, tokenize
from tabverify.text.spans import Span

__all__ = ["Link", "Linking", "Span", "Token", "link", "stem", "tokenize"]
