"""Who commits the offence: the offender a statute names against the one a claim names.

A role swap keeps every word of its evidence ("the enhanced punishment applies where a master
commits theft of property in the possession of his servant" against "Whoever, being a clerk or
servant, commits theft in respect of any property in the possession of his master"), so word
coverage passes it, and the entailment model lets most of them through with high entailment
scores (docs/VALIDATOR.md, rule 9). The statute's shape is regular, so the offender is read
from it here, as the penalty is in ``penalty``:

    statute ("Whoever, being a clerk or servant, ...")    claim ("a master who steals ...")
        │ statute_roles                                      │ claim_offenders
        ▼                                                    ▼
    offenders {clerk, servant}, others {master} ◄─ compare ─► {master}
                                                             │
                       problems: the claim's offender is a role the statute gives only to
                       someone else (the victim, the owner), or the counterpart of the
                       statute's offender (wife for husband, master for servant)

Only what is unambiguous is read, so the check errs towards silence: a statute sentence needs
its offence frame ("Whoever ..." or "Every public servant who ..."), a claim needs a role noun
as the subject of an action ("A wife who subjects ...", "where a master commits ...",
"committed by a servant"), and a claim with a negation, or naming the role a second time ("a
public servant who threatens another public servant"), is not checked.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from services.common.language.negation import CUES
from services.common.language.text import word_list
from services.common.memo import text_memo

# Role nouns, singular, with the plurals the statutes and paraphrases use. Multi-word roles come
# first in the pattern so "public servant" is not read as "servant".
_ROLES: dict[str, str] = {
    "public servants": "public servant",
    "public servant": "public servant",
    "police officers": "police officer",
    "police officer": "police officer",
    "husbands": "husband",
    "husband": "husband",
    "wives": "wife",
    "wife": "wife",
    "masters": "master",
    "master": "master",
    "servants": "servant",
    "servant": "servant",
    "employers": "employer",
    "employer": "employer",
    "employees": "employee",
    "employee": "employee",
    "clerks": "clerk",
    "clerk": "clerk",
    "guardians": "guardian",
    "guardian": "guardian",
    "parents": "parent",
    "parent": "parent",
    "fathers": "father",
    "father": "father",
    "mothers": "mother",
    "mother": "mother",
    "children": "child",
    "child": "child",
    "minors": "minor",
    "minor": "minor",
    "landlords": "landlord",
    "landlord": "landlord",
    "tenants": "tenant",
    "tenant": "tenant",
    "creditors": "creditor",
    "creditor": "creditor",
    "debtors": "debtor",
    "debtor": "debtor",
    "buyers": "buyer",
    "buyer": "buyer",
    "purchasers": "buyer",
    "purchaser": "buyer",
    "sellers": "seller",
    "seller": "seller",
    "vendors": "seller",
    "vendor": "seller",
    "owners": "owner",
    "owner": "owner",
    "trustees": "trustee",
    "trustee": "trustee",
    "agents": "agent",
    "agent": "agent",
    "principals": "principal",
    "principal": "principal",
    "bankers": "banker",
    "banker": "banker",
    "carriers": "carrier",
    "carrier": "carrier",
    "jailers": "jailer",
    "jailer": "jailer",
    "prisoners": "prisoner",
    "prisoner": "prisoner",
    "witnesses": "witness",
    "witness": "witness",
    "jurors": "juror",
    "juror": "juror",
    "judges": "judge",
    "judge": "judge",
    "soldiers": "soldier",
    "soldier": "soldier",
    "officers": "officer",
    "officer": "officer",
    "relatives": "relative",
    "relative": "relative",
    "women": "woman",
    "woman": "woman",
    "men": "man",
    "man": "man",
    "girls": "girl",
    "girl": "girl",
    "boys": "boy",
    "boy": "boy",
}

# Pairs in which one party acts on the other: naming one as the offender where the statute
# names the other is a swap.
_COUNTERPARTS: tuple[tuple[frozenset[str], frozenset[str]], ...] = tuple(
    (frozenset(word_list(a)), frozenset(word_list(b)))
    for a, b in (
        ("husband", "wife"),
        ("master employer", "servant clerk employee"),
        ("parent father mother guardian", "child minor"),
        ("landlord", "tenant"),
        ("creditor", "debtor"),
        ("buyer", "seller"),
        ("principal", "agent"),
        ("jailer", "prisoner"),
        ("man boy", "woman girl"),
    )
)

# Classes of person rather than roles in the offence.
_PERSON_CLASSES = frozenset(word_list("man woman boy girl child minor"))

_ROLE = "|".join(sorted(map(re.escape, _ROLES), key=len, reverse=True))
_DET = r"(?:a|an|any|the|every|his|her|their|such)"
# A role, or several joined by "or"/"and"/commas ("a clerk or servant", "the husband or the
# relative"), each optionally with a determiner.
_ROLE_LIST = rf"(?:{_DET}\s+)?(?:{_ROLE})(?:(?:\s*,\s*|\s+(?:or|and)\s+)(?:{_DET}\s+)?(?:{_ROLE}))*"
_ROLE_RE = re.compile(rf"\b({_ROLE})\b")
# The last word of every role: a text holding none of them names no role (a cheap pre-check).
_ROLE_WORDS = frozenset(name.split()[-1] for name in _ROLES)
_WORD_RE = re.compile(r"[a-z]+")

# Statute side. The offence frame: "Whoever" or a role-headed subject at a clause start.
_WHOEVER_RE = re.compile(r"\bwhoever\b")
_ROLE_SUBJECT_RE = re.compile(
    rf"(?:^|[;:.]\s+|\bwhoever\s*,?\s*)(?:every|any|a|an)\s+({_ROLE_LIST})\s+who\b"
)
# "Whoever, being a clerk or servant, or being employed in the capacity of a clerk or
# servant, commits ..." : the appositive segments right after "Whoever," that describe the
# offender (each starts with "being" or "or being").
_APPOSITIVE_RE = re.compile(r"\bwhoever\s*,\s*((?:(?:or\s+)?being\b[^,;]*,\s*)+)")

# Claim side: a role as the doer of an action. A claim that denies something is not read
# ("without" only qualifies: "takes a minor without the guardian's consent").
_DENIALS = CUES - {"without"}
_NOT_ACTION = frozenset(
    word_list(
        "is are was were be been being has have had gets got becomes become suffers receives "
        "falls may might can could would should must shall will"
    )
)
_CLAIM_PATTERNS: tuple[re.Pattern[str], ...] = (
    # "A wife who subjects her husband ...", "Husbands who ...", at a clause start.
    re.compile(rf"(?:^|[,;:]\s+|\b(?:that|where|if|when|whenever)\s+)({_ROLE_LIST})\s+who\s+(\w+)"),
    # "This provision punishes / targets / applies to a public servant who threatens ..."
    re.compile(
        rf"\b(?:punishes|targets|applies\s+to|covers|penali[sz]es)\s+({_ROLE_LIST})\s+who\s+(\w+)"
    ),
    # "where a master or employer commits theft ..."
    re.compile(rf"\b(?:where|if|when|whenever)\s+({_ROLE_LIST})\s+(\w+)"),
    # "theft committed by a master ..."
    re.compile(
        r"\b(?:committed|done|made|caused|taken|accepted|obtained)\s+by\s+" rf"({_ROLE_LIST})()"
    ),
)


# Anywhere in a claim, a role doing something in a who-clause ("to a clerk who then
# misappropriates it"): too loose to name the offender, enough to show the claim names it.
_ACTING_RE = re.compile(
    rf"\b({_ROLE_LIST})\s+who\s+(?:(?:then|later|also|subsequently|afterwards)\s+)?(\w+)"
)


@dataclass(frozen=True, slots=True)
class StatuteRoles:
    """The roles one statute text names: as the offender, and in any other part."""

    offenders: frozenset[str]
    others: frozenset[str]
    framed: bool  # the text has an offence frame ("Whoever ...", "Every X who ...")


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("’", "'").replace("‘", "'")).lower()


def _roles_in(text: str) -> frozenset[str]:
    return frozenset(_ROLES[m] for m in _ROLE_RE.findall(text))


@text_memo()
def statute_roles(text: str) -> StatuteRoles:
    """The offender roles a statute text names and the roles it names otherwise (memoised:
    the same passages recur across sentences and requests)."""
    flat = _flat(text)
    offenders: set[str] = set()
    for m in _APPOSITIVE_RE.finditer(flat):
        for segment in re.split(r",\s*", m[1]):
            found = re.search(rf"\bbeing\b(?:\s+[\w-]+){{0,6}}?\s+({_ROLE_LIST})", segment)
            if found:
                offenders |= _roles_in(found[1])
    for m in _ROLE_SUBJECT_RE.finditer(flat):
        offenders |= _roles_in(m[1])
    framed = bool(offenders) or bool(_WHOEVER_RE.search(flat))
    return StatuteRoles(frozenset(offenders), _roles_in(flat) - offenders, framed)


def claim_offenders(claim: str) -> frozenset[str]:
    """The roles a claim names as the doer of the offence; empty where it names none plainly
    (or is negated: "a wife who ... is not punishable under this section" is true)."""
    flat = _flat(claim)
    return _offenders(flat, _doers(flat))


def _offenders(flat: str, doers: frozenset[str]) -> frozenset[str]:
    # A role the claim names again elsewhere ("a public servant who threatens another public
    # servant") may be both parties: not read.
    mentions = [_ROLES[m] for m in _ROLE_RE.findall(flat)]
    return frozenset(r for r in doers if mentions.count(r) == 1)


def _doers(flat: str) -> frozenset[str]:
    """Every role the (flattened) claim names as the one who acts."""
    words = set(_WORD_RE.findall(flat))
    if _ROLE_WORDS.isdisjoint(words) or not _DENIALS.isdisjoint(words) or "n't" in flat:
        return frozenset()
    found: set[str] = set()
    for pattern in _CLAIM_PATTERNS:
        for m in pattern.finditer(flat):
            if m[2] and m[2] in _NOT_ACTION:  # "a woman who is subjected to ..." is the victim
                continue
            found |= _roles_in(m[1])
    return frozenset(found)


def problems(claim: str, cited: Iterable[str]) -> list[str]:
    """What the claim gets wrong about who commits the offence, against its cited texts; empty
    when it names no offender, when a cited text has no offence frame, or when any cited text
    agrees."""
    flat = _flat(claim)
    plain = _doers(flat)
    stated = _offenders(flat, plain)
    if not stated:
        return []
    texts = list(cited)
    statutes = [statute_roles(t) for t in texts]
    if not statutes or not all(s.framed for s in statutes):
        return []
    mentioned = _roles_in(flat)
    doers = plain | frozenset(
        role
        for m in _ACTING_RE.finditer(flat)
        if m[2] not in _NOT_ACTION
        for role in _roles_in(m[1])
    )
    found: list[str] = []
    for s in statutes:
        # The claim names the statute's offender acting too ("where an employer entrusts
        # property to a clerk who then misappropriates it"): the right offender is there.
        if any(_same(a, b) for a in doers for b in s.offenders):
            return []
        issue = _against(stated, s, mentioned)
        if issue is None:
            return []
        found.append(issue)
    return list(dict.fromkeys(found))


def _against(
    stated: frozenset[str], statute: StatuteRoles, mentioned: frozenset[str]
) -> str | None:
    if any(_same(a, b) for a in stated for b in statute.offenders):
        return None
    named = f"a {_names(statute.offenders)}" if statute.offenders else "anyone ('whoever')"
    # A person class ("woman", "child") is not a role: "whoever" includes women, and a woman may
    # be "the relative of the husband". It fails only as the counterpart of the offender ("Every
    # man who ..."), below.
    victim = (stated - _PERSON_CLASSES) & statute.others
    if victim:
        return (
            f"the claim makes the {_names(victim)} the offender; the cited statute names "
            f"the {_names(victim)} only as another party, and its offender is {named}"
        )
    for left, right in _COUNTERPARTS:
        for mine, theirs in ((left, right), (right, left)):
            # A person class swaps only where the claim names the other side too ("a woman who
            # deceives a man"): "a woman who consents ..." or "when the woman agrees ..." is
            # the victim acting, not the offender.
            if stated & mine <= _PERSON_CLASSES and not mentioned & theirs:
                continue
            if stated & mine and statute.offenders & theirs:
                return (
                    f"the claim makes the {_names(stated & mine)} the offender; the cited "
                    f"statute's offender is {named}"
                )
    return None


def _same(a: str, b: str) -> bool:
    """One role, or one a kind of the other: a public servant is a servant (s.221 of the
    corpus reads "being a pubic servant")."""
    return a == b or a.endswith(" " + b) or b.endswith(" " + a)


def _names(roles: Sequence[str] | frozenset[str]) -> str:
    return " or ".join(sorted(roles))
