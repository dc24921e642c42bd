"""Mentions listed more than once: which copies each side scores, by the reference scorers' rules.

A file may list one mention in two entities (KibutzR train does), or twice in one entity. The
reference scorers do not refuse such files; each counts the copies its own way, and the metrics
then look a mention up in the LAST entity that lists it. :data:`~tabverify.coref.document.CONVENTIONS`
names the rules; :func:`scored_entities` applies them to one side of a document pair and returns
one warning per such mention, so the result lists each of them.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from tabverify.coref.document import Document, Mention


def last_listing(clusters: Sequence[Sequence[Hashable]]) -> dict[Hashable, int]:
    """Each id's cluster: the last one that lists it, as both reference scorers look it up."""
    return {m: i for i, cluster in enumerate(clusters) for m in cluster}


MAX_WARNINGS = 100
"""Mentions listed more than once that are named one by one, per document and side."""


def scored_entities(doc: Document, side: str, convention: str) -> tuple[list[list[Mention]], list[str]]:
    """The entities of ``doc`` as the ``side`` (``key`` or ``response``) scores them under
    ``convention``, empty ones left out, and a warning for each mention listed more than once.

    - ``conll``: every copy stays here; the response then keeps only the first copy of a mention
      that stands for a key mention (:func:`conll_response`, once the alignment is known).
    - ``corefud``: a second copy inside one entity is dropped; copies in other entities stay.
    - ``first``: each side keeps the first copy.
    """
    listed: dict[Mention, list[int]] = {}
    for e, entity in enumerate(doc.entities):
        for m in entity:
            listed.setdefault(m, []).append(e)
    entities: list[list[Mention]]
    if convention == "conll":
        entities = [list(e) for e in doc.entities]
    elif convention == "corefud":
        entities = [list(dict.fromkeys(e)) for e in doc.entities]
    else:
        seen: set[Mention] = set()
        entities = []
        for entity in doc.entities:
            entities.append([m for m in entity if not (m in seen or seen.add(m))])  # type: ignore[func-returns-value]
    repeated = [(m, where) for m, where in listed.items() if len(where) > 1]
    warnings = [_describe(doc, side, convention, m, where) for m, where in repeated[:MAX_WARNINGS]]
    if len(repeated) > MAX_WARNINGS:
        warnings.append(
            f"document {doc.doc_id!r}, {side}: {len(repeated) - MAX_WARNINGS} more mention(s) are listed "
            "more than once, scored the same way"
        )
    return [e for e in entities if e], warnings


def _describe(doc: Document, side: str, convention: str, m: Mention, where: list[int]) -> str:
    names = [doc.entity_label(e) for e in where]
    distinct = list(dict.fromkeys(names))
    listed = (
        f"is listed in entities {', '.join(distinct)}"
        if len(distinct) > 1
        else f"is listed {len(where)} times in entity {distinct[0]}"
    )
    if convention == "conll" and side == "key":
        rule = "the key keeps every copy, and it counts as a mention of the last entity"
        rule += f" ({distinct[-1]}), as the CoNLL reference scorer does"
    elif convention == "conll":
        rule = (
            f"the response keeps only the copy in entity {distinct[0]} if it stands for a key mention "
            "(every copy otherwise), as the CoNLL reference scorer does"
        )
    elif convention == "corefud":
        rule = (
            f"each entity keeps one copy, and it counts as a mention of the last entity ({distinct[-1]}), "
            "as the CorefUD scorer does"
            if len(distinct) > 1
            else "one copy is kept, as the CorefUD scorer does"
        )
    else:
        rule = f"only the copy in entity {distinct[0]} is kept (first listed)"
    text = doc.mention_text(m)
    text = text if len(text) <= 40 else text[:39] + "…"
    return f"document {doc.doc_id!r}, {side}: mention {text!r} {m} {listed}; {rule}"


def conll_response(clusters: list[list[Hashable]], key_ids: set[Hashable]) -> list[list[Hashable]]:
    """The CoNLL reference scorer's response: an id that stands for a key mention keeps its first
    copy only (its repeat check knows key mentions only); any other id keeps every copy. Entities
    left empty are dropped."""
    seen: set[Hashable] = set()
    kept = []
    for cluster in clusters:
        entity = []
        for m in cluster:
            if m in key_ids:
                if m in seen:
                    continue
                seen.add(m)
            entity.append(m)
        if entity:
            kept.append(entity)
    return kept
