"""Penalties parsed from statute text and from claims, and the ways a claim can misstate one.

A contradiction of a penalty shares almost every word with its evidence ("imprisonment ... for a
term which shall not be less than seven years" against "... which may extend to seven years"),
so neither word coverage nor a learned model trained on little statute text tells them apart
reliably. The structure is regular, though, so it is parsed and compared here:

    evidence clause ("shall be punished with ...")      claim ("punishable with up to ...")
        │ parse_evidence                                     │ parse_claim
        ▼                                                    ▼
    Penalty(kinds, description, max/min term, fine) ◄── compare ──► Penalty(... as stated)
                                                             │
                                        problems: death not provided, minimum stated as
                                        maximum, simple vs rigorous, "and" vs "or" fine, ...

A claim is only checked on what it states: "theft is punishable with imprisonment" says nothing
about the term or the fine, so it cannot misstate them. A claim is consistent when it agrees with
at least one penalty clause of its cited evidence (a section often has an aggravated form).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from enum import Enum

from services.common.language.quantities import extract_quantities


class Description(Enum):
    """The kind of term imprisonment (IPC s.53: simple, rigorous, or either)."""

    SIMPLE = "simple"
    RIGOROUS = "rigorous"
    EITHER = "either description"


class FineMode(Enum):
    """How a fine relates to the other punishments."""

    ALTERNATIVE = "instead of the other punishment"  # "or with fine"
    CUMULATIVE = "in addition to the other punishment"  # "and shall also be liable to fine"
    MANDATORY = "mandatory"  # "and with fine" (a statute), "must pay a fine" (a claim)
    OPTIONAL = "at the court's discretion"  # a claim: "the fine is optional"
    ONLY = "the only punishment"  # "shall be punished with fine"


@dataclass(frozen=True, slots=True)
class Term:
    """A term of imprisonment in months and how it is bounded ("max", "min" or "exact")."""

    months: float
    bound: str


@dataclass(frozen=True, slots=True)
class Penalty:
    """What a penalty clause (or claim) states; ``None``/empty means "not stated"."""

    death: bool = False
    life: bool = False
    imprisonment: bool = False
    description: Description | None = None
    terms: tuple[Term, ...] = ()
    fine: bool = False
    fine_mode: FineMode | None = None
    either_or_both: bool = False  # "or with both"
    text: str = field(default="", compare=False)

    @property
    def stated(self) -> bool:
        return self.death or self.life or self.imprisonment or self.fine

    def bound(self, kind: str) -> float | None:
        return next((t.months for t in self.terms if t.bound == kind), None)


_UNIT_MONTHS = {"year": 12.0, "month": 1.0, "week": 12 / 52, "day": 12 / 365}
_PUNISHED = re.compile(r"\bpunish(?:ed|able)\s+(?:\w+\s+){0,2}?with\b", re.IGNORECASE)
# The corpus glues footnote digits to words ("death1", "fine1"): words end at a non-letter.
_DEATH = re.compile(
    r"\bdeath(?![a-z])(?!\s+of\b)|\bcapital\s+punishment|\bhang(?:ed|ing)\b|\bexecut(?:ed|ion)\b",
    re.IGNORECASE,
)
_DEATH_PENALTY = re.compile(r"\bdeath\s+(?:penalty|sentence)|\bcapital\s+punishment", re.IGNORECASE)
# Where a claim's penalty begins: "death" before it describes the offence ("causing death").
_PENALTY_START = re.compile(
    r"\bpunish\w*|\bpenalt\w*|\bsentenc\w*|\bcarr(?:y|ies)\b|\bliable\b|\bfaces?\b"
    r"|\bimprison\w*|\bjail\w*|\bprison\b|\blead\s+to\b|\bmeans\b",
    re.IGNORECASE,
)
_LIFE = re.compile(
    r"\b(?:imprisonment|imprisoned|jail|prison)\s+for\s+(?:the\s+rest\s+of\s+\w+\s+)?life\b"
    r"|\blife\s+(?:imprisonment|sentence|term)\b|\bfor\s+life\b|\blifer?\b(?=\s+in\s+prison)",
    re.IGNORECASE,
)
_IMPRISONMENT = re.compile(
    r"\bimprison(?:ment|ed)?\b|\bjail(?:ed)?\b|\bprison\b|\bincarcerat\w*|\bcustod(?:y|ial)\b",
    re.IGNORECASE,
)
_EITHER = re.compile(
    r"\beither\s+(?:description|kind|type)\b|\bsimple\s+or\s+rigorous\b|\brigorous\s+or\s+simple\b",
    re.IGNORECASE,
)
_RIGOROUS = re.compile(r"\brigorous\b|\bhard\s+labou?r\b", re.IGNORECASE)
_SIMPLE = re.compile(r"\bsimple\s+(?:imprisonment|jail|custody)\b", re.IGNORECASE)
_FINE = re.compile(r"\bfine[sd]?(?![a-z])|\bmonetary\s+penalty\b", re.IGNORECASE)
_OR_BOTH = re.compile(r"\bor\s+(?:with\s+)?both\b|\band/or\b", re.IGNORECASE)
_FINE_MANDATORY = re.compile(
    r"\b(?:must|shall|will)\s+(?:also\s+)?(?:be\s+fined|pay\s+(?:a\s+)?fine)"
    r"|\bmandatory\s+fine|\bfine\s+is\s+(?:mandatory|compulsory|obligatory)"
    r"|\bcompulsor(?:y|ily)\b[^.]*\bfine|\bfine\b[^.]*\bcompulsor(?:y|ily)\b",
    re.IGNORECASE,
)
# A statute's "and with fine" (ss. 326A, 376A-376E, ...) makes the fine part of the sentence;
# "and shall also be liable to fine" only allows it (CUMULATIVE).
_FINE_WITH = re.compile(r"\band\s+(?:also\s+)?with\s+fine(?![a-z])", re.IGNORECASE)
# A claim that the fine is up to the court, anywhere in the claim (``parse_claim``), over any
# mode read before: "a fine is not compulsory" holds "compulsory ... fine".
_FINE_OPTIONAL = re.compile(
    r"\bfine\s+is\s+(?:optional|discretionary|not\s+(?:mandatory|compulsory|obligatory))"
    r"|\b(?:optional|discretionary)\s+fine|\bnot\s+(?:mandatory|compulsory|obligatory)\b[^.]*\bfine"
    r"|\bfine\b[^.]*\b(?:at|in|to)\s+(?:the\s+)?(?:court'?s\s+|judge'?s\s+|its\s+)?discretion"
    r"|\bdiscretion\b[^.]*\bfine|\bwhether\s+or\s+not\s+to\b[^.]*\bfine"
    r"|\bmay\s+or\s+may\s+not\b[^.]*\bfine|\bneed\s+not\b[^.]*\bfine"
    r"|\bfine\s+(?:need\s+not|does\s+not\s+have\s+to)\b"
    r"|\bnot\s+necessarily\b[^.]*\bfine",
    re.IGNORECASE,
)
_FINE_CUMULATIVE = re.compile(
    r"\band\s+(?:shall\s+|is\s+|will\s+)?(?:also\s+)?(?:be\s+)?liable\s+to\s+(?:a\s+)?fine"
    r"|\band\s+(?:also\s+)?(?:with\s+)?(?:a\s+)?fine(?![a-z])|\bas\s+well\s+as\s+(?:a\s+)?fine"
    r"|\bplus\s+(?:a\s+)?fine|\balong\s+with\s+(?:a\s+)?fine|\bboth\b[^.]*\band\s+(?:a\s+)?fine"
    r"|\bfine\s+in\s+addition|\bin\s+addition\b[^.]*\bfine|\btogether\s+with\s+(?:a\s+)?fine"
    r"|\bfine\b\s+(?:too|as\s+well)\b|\balso\s+(?:be\s+)?(?:liable\s+to|fined)",
    re.IGNORECASE,
)
_FINE_ALTERNATIVE = re.compile(
    r"\bor\s+(?:with\s+|by\s+)?(?:a\s+|only\s+a\s+)?fine\b|\bfine\s+instead|\binstead\b[^.]*\bfine"
    r"|\beither\b[^.]*\bor\s+(?:with\s+)?(?:a\s+)?fine",
    re.IGNORECASE,
)
# Words that bound a term: looked for in the few words before a duration (and "maximum" after).
_MAX_BEFORE = re.compile(
    r"(?:may\s+extend\s+to|extend(?:s|ing)?\s+to|up\s*to|not\s+exceeding|not\s+more\s+than|"
    r"no\s+more\s+than|no\s+longer\s+than|not\s+longer\s+than|maximum(?:\s+(?:term|period|sentence))?"
    r"(?:\s+of)?|at\s+(?:the\s+)?most|as\s+(?:much|long)\s+as|less\s+than|under|within|until|till)"
    r"\s+(?:a\s+(?:term|period)\s+of\s+)?(?:\S+\s+)?$",
    re.IGNORECASE,
)
_MIN_BEFORE = re.compile(
    r"(?:not\s+(?:be\s+)?less\s+than|no\s+less\s+than|not\s+below|at\s+least|minimum(?:\s+"
    r"(?:term|period|sentence))?(?:\s+of)?|no\s+shorter\s+than"
    # "more than", "over", "exceeding" bound from below only when not negated: "not exceeding
    # ten years" and "no more than twelve months" are maxima.
    r"|(?<!\bnot\s)(?<!\bno\s)(?:more\s+than|over|exceeding))"
    r"\s+(?:a\s+(?:term|period)\s+of\s+)?(?:\S+\s+)?$",
    re.IGNORECASE,
)
_MAX_AFTER = re.compile(
    r"^\W*(?:\w+\s+){0,2}(?:maximum|at\s+(?:the\s+)?most|or\s+less)\b", re.IGNORECASE
)
_MIN_AFTER = re.compile(r"^\W*(?:\w+\s+){0,2}(?:minimum|at\s+least|or\s+more)\b", re.IGNORECASE)
# "an offence punishable with death, imprisonment for life or ... , shall" names the offence
# being conspired to, abetted, concealed ...: up to the verb that follows, it is no penalty.
_NAMED_OFFENCE = re.compile(
    r"\boffences?\s+(?:which\s+is\s+|that\s+is\s+)?punishable\s+(?:\w+\s+){0,2}?with\b.*?"
    r"(?=,?\s+(?:shall|is|are|will|may|can|must|faces?|carries|carry)\b|[;.]|$)",
    re.IGNORECASE,
)
_ONLY = re.compile(r"\bonly\b|\balone\b|\bmerely\b|\bjust\s+a\b|\bnothing\s+but\b", re.IGNORECASE)
_RANGE_JOINER = re.compile(r"\s*(?:[\w'’]+\s+)?(?:to|and|-|–|—)\s*", re.IGNORECASE)
_AGE_AFTER = re.compile(r"^\s*(?:of\s+age|old|of\s+(?:his|her|its|their)\s+age)\b", re.IGNORECASE)
_TERM_WORDS = re.compile(
    r"\bimprison\w*|\bjail\w*|\bprison\b|\bterm\b|\bsentence\w*|\bpunish\w*|\bcustod\w*"
    r"|\bincarcerat\w*|\bcarr(?:y|ies)\b|\blead\s+to\b|\bpenalty\b",
    re.IGNORECASE,
)
_CLAIM_CUE = re.compile(
    r"\bpunish\w*|\bpenalt\w*|\bsentence\w*|\bimprison\w*|\bjail\w*|\bprison\b|\bfine[sd]?\b"
    r"|\bdeath\b|\bcapital\s+punishment|\bcarr(?:y|ies)\b",
    re.IGNORECASE,
)


def parse_evidence(text: str) -> tuple[Penalty, ...]:
    """The penalty clauses of a statute text ("shall be punished with ..."), in order.

    Each clause runs from one "punished/punishable with" to the next (or the end), so "... shall
    be punished with X; and if ..., shall be punished with Y" gives two clauses.
    """
    starts = [m.start() for m in _PUNISHED.finditer(text)]
    clauses = []
    for k, start in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(text)
        clause = text[start:end]
        # "an offence punishable with death" inside an offence's description names another
        # offence's penalty; it is not this section's penalty unless the section says "shall".
        if not re.match(r"punished", clause, re.IGNORECASE) and re.search(
            r"\boffence\s+$", text[max(0, start - 12) : start], re.IGNORECASE
        ):
            continue
        penalty = _parse(clause, claim=False)
        if penalty.stated:
            clauses.append(penalty)
    return tuple(clauses)


def parse_claim(text: str) -> Penalty | None:
    """What penalty a claim states, or None when it states none."""
    if not _CLAIM_CUE.search(text):
        return None
    # An offence named as context ("an offence punishable with death") is not the claim's
    # penalty; drop those phrases before parsing.
    body = _NAMED_OFFENCE.sub(" ", text)
    start = _PENALTY_START.search(body)
    region = body[start.start() :] if start else body
    penalty = _parse(region, claim=True)
    if not penalty.death and _DEATH_PENALTY.search(body):
        penalty = replace(penalty, death=True)
    # "the court may choose whether or not to add a fine to the imprisonment": said of the
    # fine before the penalty the region starts at.
    if penalty.fine_mode is not FineMode.OPTIONAL and _FINE_OPTIONAL.search(body):
        penalty = replace(penalty, fine=True, fine_mode=FineMode.OPTIONAL)
    return penalty if penalty.stated else None


def _parse(text: str, *, claim: bool) -> Penalty:
    death = bool(_DEATH.search(text))
    life = bool(_LIFE.search(text))
    imprisonment = bool(_IMPRISONMENT.search(text)) or life
    description: Description | None = None
    if _EITHER.search(text):
        description = Description.EITHER
    elif _RIGOROUS.search(text):
        description = Description.RIGOROUS
    elif _SIMPLE.search(text):
        description = Description.SIMPLE
    terms = _terms(text, claim=claim)
    if terms:
        imprisonment = True
    fine = bool(_FINE.search(text))
    mode: FineMode | None = None
    if fine:
        if _FINE_MANDATORY.search(text) or (not claim and _FINE_WITH.search(text)):
            mode = FineMode.MANDATORY
        elif _FINE_ALTERNATIVE.search(text):
            mode = FineMode.ALTERNATIVE
        elif _FINE_CUMULATIVE.search(text):
            mode = FineMode.CUMULATIVE
        elif not (death or life or imprisonment) and (not claim or _ONLY.search(text)):
            # A claim that names a fine alone may just be partial ("theft attracts a fine");
            # it says the fine is the only punishment only in so many words.
            mode = FineMode.ONLY
    return Penalty(
        death=death,
        life=life,
        imprisonment=imprisonment,
        description=description,
        terms=terms,
        fine=fine,
        fine_mode=mode,
        either_or_both=bool(_OR_BOTH.search(text)),
        text=text,
    )


def _terms(text: str, *, claim: bool) -> tuple[Term, ...]:
    """Durations that are terms of imprisonment, with their bound ("max", "min", "exact")."""
    cue = _TERM_WORDS.search(text)
    if cue is None:
        return ()
    terms: list[Term] = []
    quantities = extract_quantities(text)
    range_starts: dict[int, float] = {}  # index of a range's upper end -> its lower end's value
    for k in range(1, len(quantities)):
        low, high = quantities[k - 1], quantities[k]
        joined = _RANGE_JOINER.fullmatch(text[low.end : high.start])
        if high.unit in _UNIT_MONTHS and low.unit in ("", high.unit) and joined:
            range_starts[k] = low.value
    for k, q in enumerate(quantities):
        if q.unit not in _UNIT_MONTHS or q.start < cue.start() or q.reference:
            continue
        if k in range_starts:  # "5 to 7 years", "between one and five years"
            terms.append(Term(range_starts[k] * _UNIT_MONTHS[q.unit], "min"))
            terms.append(Term(q.value * _UNIT_MONTHS[q.unit], "max"))
            continue
        if k + 1 in range_starts and quantities[k + 1].unit == q.unit:
            continue  # the lower end of a range with units on both ends, handled above
        after = text[q.end :]
        unit_end = re.match(r"\s*[\w'’-]*", after)
        rest = after[unit_end.end() :] if unit_end else after
        if _AGE_AFTER.match(rest):
            continue  # "under seven years of age" is an age, not a term
        before = text[max(0, q.start - 60) : q.start]
        if _MIN_BEFORE.search(before) or _MIN_AFTER.match(rest):
            bound = "min"
        elif _MAX_BEFORE.search(before) or _MAX_AFTER.match(rest):
            bound = "max"
        else:
            bound = "exact"
        if bound == "exact" and not claim:
            continue  # statute text always bounds its terms; an unbounded number is not one
        terms.append(Term(q.value * _UNIT_MONTHS[q.unit], bound))
    return tuple(terms)


def problems(claim: Penalty, evidence: Sequence[Penalty]) -> list[str]:
    """Why ``claim`` misstates every clause of ``evidence`` (empty: it agrees with one)."""
    if not evidence:
        return []
    # Kinds, description and fine must agree with one clause; each stated term with some clause
    # ("up to 3 years, or up to 7 years where hurt is caused" names two clauses' maxima).
    best: list[str] | None = None
    for clause in evidence:
        found = _against(claim, clause)
        if not found:
            best = []
            break
        if best is None or len(found) < len(best):
            best = found
    out = list(best or [])
    for term in claim.terms:
        single = replace(claim, terms=(term,))
        misstated = [_term_problems(single, clause) for clause in evidence]
        if all(misstated):
            out.extend(x for x in min(misstated, key=len) if x not in out)
    return out


def _against(claim: Penalty, ev: Penalty) -> list[str]:
    out: list[str] = []
    if claim.death and not ev.death:
        out.append("the cited penalty does not include death")
    if claim.life and not ev.life:
        out.append("the cited penalty does not include imprisonment for life")
    if (
        claim.imprisonment
        and not claim.life
        and not claim.death
        and not ev.imprisonment
        and not claim.terms
        and ev.fine_mode is FineMode.ONLY
    ):
        out.append("the cited penalty is a fine, not imprisonment")
    if claim.description and ev.description and claim.description is not ev.description:
        out.append(
            f"the claim says {claim.description.value} imprisonment, the cited text "
            f"{ev.description.value}"
        )
    if claim.fine and not ev.fine:
        out.append("the cited penalty has no fine")
    elif claim.fine_mode and ev.fine:
        expected = ev.fine_mode or FineMode.CUMULATIVE
        if claim.fine_mode is FineMode.CUMULATIVE and expected is FineMode.ALTERNATIVE:
            if not ev.either_or_both or not claim.either_or_both:
                out.append("the cited text makes the fine an alternative ('or'), not an addition")
        elif claim.fine_mode is FineMode.ALTERNATIVE and expected in (
            FineMode.CUMULATIVE,
            FineMode.MANDATORY,
        ):
            out.append("the cited text adds the fine ('and'), it is not an alternative")
        elif claim.fine_mode is FineMode.MANDATORY and expected is not FineMode.MANDATORY:
            out.append("the cited text makes the fine possible ('liable to'), not mandatory")
        elif claim.fine_mode is FineMode.OPTIONAL and expected is FineMode.MANDATORY:
            out.append(
                "the cited text makes the fine part of the sentence ('and with fine'), not optional"
            )
        elif (
            claim.fine_mode is FineMode.ONLY
            and (ev.imprisonment or ev.death or ev.life)
            and ev.fine_mode is not FineMode.ALTERNATIVE
        ):
            out.append("the cited penalty is not a fine alone")
    if (
        claim.either_or_both
        and ev.fine
        and not ev.either_or_both
        and ev.fine_mode not in (None, FineMode.ALTERNATIVE)
    ):
        out.append("the cited text does not allow 'or both'")
    return out


def _term_problems(claim: Penalty, ev: Penalty) -> list[str]:
    out: list[str] = []
    ev_max, ev_min = ev.bound("max"), ev.bound("min")
    if claim.terms and ev_max is None and ev_min is None:
        if ev.life or ev.death or ev.fine_mode is FineMode.ONLY:
            return ["the cited penalty gives no term of years"]
        return []
    for term in claim.terms:
        if term.bound == "max":
            if ev_max is None and ev_min is not None:
                out.append(f"the cited text sets a minimum of {_months(ev_min)}, not a maximum")
            elif ev_max is not None and abs(ev_max - term.months) > 1e-6:
                out.append(f"the cited maximum is {_months(ev_max)}, not {_months(term.months)}")
        elif term.bound == "min":
            if ev_min is None and ev_max is not None:
                out.append(f"the cited text sets a maximum of {_months(ev_max)}, not a minimum")
            elif ev_min is not None and abs(ev_min - term.months) > 1e-6:
                out.append(f"the cited minimum is {_months(ev_min)}, not {_months(term.months)}")
        elif ev_max is not None or ev_min is not None:
            out.append(
                f"the claim states a fixed term of {_months(term.months)}; the cited text gives "
                + (f"a maximum of {_months(ev_max)}" if ev_max is not None else "")
                + (" and " if ev_max is not None and ev_min is not None else "")
                + (f"a minimum of {_months(ev_min)}" if ev_min is not None else "")
            )
    return out


def _months(months: float) -> str:
    if months >= 12 and abs(months / 12 - round(months / 12)) < 1e-6:
        years = round(months / 12)
        return f"{years} year{'s' if years != 1 else ''}"
    return f"{months:g} month{'s' if months != 1 else ''}"
