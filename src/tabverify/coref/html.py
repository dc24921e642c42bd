"""An HTML alignment view for error analysis: each document's text twice (gold, system) with its
mentions bracketed, then the aligned pairs, the misses and the spurious mentions.

Gold brackets carry their gold entity's colour and name (``G`` + the name in the file). System
brackets carry their OWN entity's name (``S`` + the name) and the colour of the gold entity that
system entity stands for: the gold entity most of its aligned mentions belong to (ties to the
lower gold entity). An aligned system mention whose entity stands for another gold entity than its
partner's - a system that puts "ביתו" in the wrong entity - is marked as a wrong link, in the text
and in the pairs table, so a wrong clustering never looks right on the page.

Every piece of user text (document ids, texts, entity names, options, warnings) is escaped. Text
direction follows the text (``dir="auto"``), so Hebrew reads right to left. The page is
self-contained: no scripts, nothing loaded.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from html import escape

from tabverify.coref.document import Document, Mention, text_order
from tabverify.coref.duplicates import last_listing
from tabverify.coref.hard_cases import CATEGORIES, FAR_SENTENCES, OUTCOMES, HardCase, HardCases
from tabverify.coref.score import CorefResult, DocumentAlignment
from tabverify.text.normalize import one_line

_PAGE_STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
h2 { border-top: 1px solid #ccc; padding-top: 0.8em; }
"""

REPORT_STYLE = """
.text { white-space: pre-wrap; unicode-bidi: plaintext; line-height: 2.1; border: 1px solid #ddd;
        padding: 0.6em; font-size: 1.05em; }
.b { font-weight: 700; } sub { font-size: 0.65em; }
.lost { background: #fdd; } .extra { background: #ffe9b3; }
.wrong { outline: 2px solid #c00; background: #fcc; }
tr.wrong td { background: #fdd; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }
td, th { border: 1px solid #ccc; padding: 2px 8px; text-align: start; unicode-bidi: plaintext; }
.context { unicode-bidi: plaintext; } .context mark { background: #dde8ff; font-weight: 600; }
"""

_NEUTRAL = "#555"  # a system entity that stands for no gold entity


def _colour(index: int) -> str:
    return f"hsl({(index * 137.508) % 360:.0f}, 65%, 38%)"


@dataclass(frozen=True)
class _Bracket:
    """How one mention is drawn: colour, label (subscript), CSS class and hover title."""

    colour: str
    label: str
    css: str = ""


SHOWN_CHARACTERS = 200
"""The most of one mention the page shows (its text, its units): a long mention is shown by its
start, so the page stays linear in the text however many long mentions nest."""


def _shown(doc: Document, mention: Mention) -> tuple[str, str]:
    """(text, character units) of a mention as the page shows them, each at most
    :data:`SHOWN_CHARACTERS` long."""
    if mention.end - mention.start <= SHOWN_CHARACTERS:
        words, where = doc.mention_text(mention), str(mention)
    else:
        words, where = (
            doc.text[mention.start : mention.start + SHOWN_CHARACTERS],
            f"[{mention.start},{mention.end})",
        )
    return one_line(words, SHOWN_CHARACTERS), one_line(where, SHOWN_CHARACTERS)


def _title(doc: Document, bracket: _Bracket, mention: Mention) -> str:
    """A mention's hover title: label, text, characters, kind."""
    words, where = _shown(doc, mention)
    kind = mention.kind + (f"/{mention.subkind}" if mention.subkind else "")
    return f"{bracket.label}: {words} {where} {kind}"


def _listed(doc: Document, mention: Mention) -> str:
    """A mention as a list item: its text and characters."""
    words, where = _shown(doc, mention)
    return f"<li>{escape(words)} {escape(where)}</li>"


def _marked(doc: Document, brackets: Mapping[Mention, _Bracket]) -> str:
    """The text with every mention bracketed; brackets carry their colour and label."""
    opens: dict[int, list[Mention]] = {}
    closes: dict[int, list[Mention]] = {}
    for mention in brackets:
        opens.setdefault(mention.start, []).append(mention)
        closes.setdefault(mention.end, []).append(mention)
    out = []
    for i in range(len(doc.text) + 1):
        for m in sorted(closes.get(i, []), key=lambda m: m.start, reverse=True):
            b = brackets[m]
            out.append(
                f'<span class="b {b.css}" style="color:{b.colour}">]<sub>{escape(b.label)}</sub></span>'
            )
        for m in sorted(opens.get(i, []), key=lambda m: -m.end):
            b = brackets[m]
            out.append(
                f'<span class="b {b.css}" style="color:{b.colour}" title="{escape(_title(doc, b, m))}">[</span>'
            )
        if i < len(doc.text):
            out.append(escape(doc.text[i]))
    return "".join(out)


def system_stands_for(scored: DocumentAlignment) -> dict[int, int]:
    """System entity -> the gold entity it stands for: the one most of its aligned mentions belong
    to (ties to the lower gold entity); system entities without aligned mentions are absent."""
    gold_of = last_listing(scored.key_entities)
    stands_for = {}
    for j, entity in enumerate(scored.response_entities):
        votes = Counter(gold_of[scored.alignment[m]] for m in entity if m in scored.alignment)
        if votes:
            stands_for[j] = min(votes, key=lambda g: (-votes[g], g))
    return stands_for


def wrong_links(scored: DocumentAlignment) -> set[Mention]:
    """Aligned system mentions whose system entity stands for another gold entity than their
    partner's (:func:`system_stands_for`)."""
    gold_of, system_of = last_listing(scored.key_entities), last_listing(scored.response_entities)
    stands_for = system_stands_for(scored)
    return {s for s, k in scored.alignment.items() if stands_for.get(system_of[s]) != gold_of[k]}


def _section(scored: DocumentAlignment) -> str:
    key, response, alignment = scored.key, scored.response, scored.alignment
    key_mentions = list(dict.fromkeys(m for e in scored.key_entities for m in e))
    response_mentions = list(dict.fromkeys(m for e in scored.response_entities for m in e))
    gold_of, system_of = last_listing(scored.key_entities), last_listing(scored.response_entities)
    stands_for, wrong = system_stands_for(scored), wrong_links(scored)

    def gold(i: int) -> str:
        return "G" + key.entity_label(i)

    def system(j: int) -> str:
        return "S" + response.entity_label(j)

    found = set(alignment.values())
    misses = [m for m in key_mentions if m not in found]
    spurious = [m for m in response_mentions if m not in alignment]
    gold_brackets = {
        m: _Bracket(_colour(gold_of[m]), gold(gold_of[m]), "lost" if m not in found else "")
        for m in key_mentions
    }
    system_brackets = {}
    for m in response_mentions:
        j = system_of[m]
        colour = _colour(stands_for[j]) if j in stands_for else _NEUTRAL
        css = "wrong" if m in wrong else "extra" if m not in alignment else ""
        label = system(j) + (f"≈{gold(stands_for[j])}" if j in stands_for else "")
        system_brackets[m] = _Bracket(colour, label, css)
    rows = []
    for s, k in sorted(alignment.items(), key=lambda item: text_order(item[1])):
        j = system_of[s]
        verdict = "wrong link" if s in wrong else "agrees"
        (key_words, key_where), (words, where) = _shown(key, k), _shown(response, s)
        rows.append(
            f'<tr class="{"wrong" if s in wrong else "ok"}"><td>{escape(key_words)}</td>'
            f"<td>{escape(key_where)}</td><td>{escape(gold(gold_of[k]))}</td>"
            f"<td>{escape(words)}</td><td>{escape(where)}</td>"
            f"<td>{escape(system(j))}</td><td>{escape(gold(stands_for[j]) if j in stands_for else '-')}</td>"
            f"<td>{verdict}</td></tr>"
        )
    lost = "".join(_listed(key, m) for m in misses) or "<li>none</li>"
    extra = "".join(_listed(response, m) for m in spurious) or "<li>none</li>"
    return (
        f"<h2>{escape(key.doc_id)}</h2>"
        f'<h3>Gold</h3><div class="text gold" dir="auto">{_marked(key, gold_brackets)}</div>'
        f'<h3>System</h3><div class="text system" dir="auto">{_marked(response, system_brackets)}</div>'
        f"<h3>Aligned pairs ({len(alignment)}, {len(wrong)} in a wrong entity)</h3>"
        '<table class="pairs"><tr><th>gold</th><th>span</th><th>gold entity</th><th>system</th><th>span</th>'
        f"<th>system entity</th><th>stands for</th><th>link</th></tr>{''.join(rows)}</table>"
        f'<h3>Missed gold mentions ({len(misses)})</h3><ul dir="auto">{lost}</ul>'
        f'<h3>Spurious system mentions ({len(spurious)})</h3><ul dir="auto">{extra}</ul>'
    )


def render_entities(doc: Document) -> str:
    """One document's text with every mention bracketed in its entity's colour and name (``E`` + the
    name), sub-word mentions inside their words - e.g. the resolver's output - as an HTML fragment
    styled by :data:`REPORT_STYLE`."""
    brackets = {
        m: _Bracket(_colour(i), "E" + doc.entity_label(i))
        for i, entity in enumerate(doc.entities)
        for m in entity
    }
    return f'<div class="text entities" dir="auto">{_marked(doc, brackets)}</div>'


CONTEXT = 40
"""Characters of text shown on each side of a hard case's mentions."""

_CATEGORY_TITLES = {
    "long_distance_pronoun": "Long-distance agreement-only pronoun links (gold links)",
    "article_singleton": "Mentions opening with ה- that are gold singletons (often generic)",
    "article_in_entity": "Mentions opening with ה- in multi-mention gold entities (specific)",
    "zero": "Zero mentions",
}


def _context(text: str, mentions: list[Mention]) -> str:
    """The text around ``mentions`` (in text order) with each marked; a stretch longer than twice
    :data:`CONTEXT` between two of them is cut to " … "."""
    pieces, position = [], max(0, mentions[0].start - CONTEXT)
    if position:
        pieces.append("…")
    for m in mentions:
        between = text[position : m.start]
        if len(between) > 2 * CONTEXT:
            between = f"{between[:CONTEXT]} … {between[-CONTEXT:]}"
        marked = text[m.start : min(m.end, m.start + SHOWN_CHARACTERS)] + (
            "…" if m.end - m.start > SHOWN_CHARACTERS else ""
        )
        pieces.append(escape(between) + f"<mark>{escape(marked)}</mark>")
        position = m.end
    end = min(len(text), position + CONTEXT)
    pieces.append(escape(text[position:end]) + ("…" if end < len(text) else ""))
    return "".join(pieces)


def _hard_case_row(case: HardCase) -> str:
    mentions = [case.mention] if case.antecedent is None else [case.antecedent, case.mention]
    return (
        f"<tr><td>{escape(case.key.doc_id)}</td>"
        f'<td class="context" dir="auto">{_context(case.key.text, mentions)}</td>'
        f"<td>{escape(_shown(case.key, case.mention)[1])}</td><td>{case.outcome}</td>"
        f'<td dir="auto">{escape(one_line(case.system, 2 * SHOWN_CHARACTERS))}</td></tr>'
    )


def hard_cases_fragment(cases: HardCases) -> str:
    """The hard-cases section (:mod:`tabverify.coref.hard_cases`) as an HTML fragment: per category
    the counts by outcome and the examples, each with the text around its mentions."""
    head = "".join(f"<th>{o}</th>" for o in OUTCOMES)
    rows = "".join(
        f"<tr><td>{_CATEGORY_TITLES[c]}</td>{''.join(f'<td>{cases.counts[c][o]}</td>' for o in OUTCOMES)}"
        f"<td>{sum(cases.counts[c].values())}</td></tr>"
        for c in CATEGORIES
    )
    notes = "".join(f"<li>{escape(n)}</li>" for n in cases.notes)
    examples = "".join(
        f"<h3>{_CATEGORY_TITLES[c]}: examples ({len(cases.examples[c])})</h3>"
        '<table class="hard-examples"><tr><th>document</th><th>text (gold mentions marked)</th><th>span</th>'
        f"<th>outcome</th><th>system</th></tr>{''.join(_hard_case_row(e) for e in cases.examples[c])}</table>"
        for c in CATEGORIES
        if cases.examples[c]
    )
    return (
        '<section class="hard-cases" id="hard-cases"><h2>Hard cases</h2><p>Defined from the gold key (the same cases for '
        f"every system): a pronoun linked to an antecedent at least {FAR_SENTENCES} sentence ends back that "
        "shares no word with it; gold mentions opening with a written article ה-, singletons and mentions of "
        "larger entities; gold zero mentions. <em>right</em>: a link kept, a singleton left alone, a mention in "
        "a system entity with another mention of its gold entity; <em>unlinked</em>: found but alone; "
        "<em>wrong</em>: linked, but not as the gold; <em>missed</em>: not found (a link: either end).</p>"
        f'<table class="hard-counts"><tr><th>case</th>{head}<th>total</th></tr>{rows}</table>'
        f"{'<ul class=notes>' + notes + '</ul>' if notes else ''}{examples}</section>"
    )


def alignment_fragment(result: CorefResult) -> str:
    """The alignment view's body as an HTML fragment (legend, warnings, one section per document
    pair, then the hard cases), styled by :data:`REPORT_STYLE` (the web app shows it inside its own page)."""
    sections = "".join(_section(scored) for scored in result.alignments)
    notes = "".join(f"<li>{escape(w)}</li>" for w in result.warnings)
    options = "; ".join(f"{k}: {v}" for k, v in result.options.items() if v is not None)
    legend = (
        f"<p>{escape(options)}.</p><p>Gold brackets carry their entity's colour and name (G…). "
        "System brackets carry their own entity's name (S…) and, after ≈, the gold entity it stands "
        "for (the one most of its aligned mentions belong to), in that entity's colour; grey when it "
        'stands for none. <span class="wrong">[</span> marks a system mention in a wrong entity (its '
        'entity stands for another gold entity than its partner\'s), <span class="lost">[</span> a '
        'missed gold mention, <span class="extra">[</span> a spurious one. The <a href="#hard-cases">hard '
        "cases</a> (long-distance pronoun links, ה- mentions, zeros) are counted after the documents.</p>"
    )
    warnings = f"<ul class=warnings>{notes}</ul>" if notes else ""
    return f"{legend}{warnings}{sections}{hard_cases_fragment(result.hard_cases)}"


def render_alignment(result: CorefResult) -> str:
    """The HTML page for a scored response: one section per document pair, drawn from the
    alignment the scores were computed with."""
    return (
        '<!DOCTYPE html>\n<html lang="und" dir="auto"><head><meta charset="utf-8"><title>tabverify coref alignment'
        f"</title><style>{_PAGE_STYLE}{REPORT_STYLE}</style></head><body><h1>Coreference alignment</h1>"
        f"{alignment_fragment(result)}</body></html>\n"
    )
