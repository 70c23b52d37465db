"""Query intents and their profiles, shared by retrieval (expansion, rerank) and synthesis
(sufficiency): the one definition of what each kind of question asks for and looks like."""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from services.common.language.conversation import asked_question
from services.common.language.references import REFERENCE_PATTERN


class Intent(enum.Enum):
    """What a question asks for: drives retrieval expansion and the synthesis sufficiency rule."""

    DEFINITION = "definition"
    PUNISHMENT = "punishment"
    PROCEDURE = "procedure"
    SCOPE = "scope"
    GENERAL = "general"


# A question asking in the Code's own defining words (rules BI, BJ): "What counts as house
# trespass?", "Who is said to kidnap ...?", "Which kinds of hurt are designated as grievous?",
# "What do they call ...?", "... called bribery?". One definition for the definition cue and
# for the explicit-definition check that keeps such a question a definition at any length.
_DEFINING_WORDS = (
    r"\bcount(?:s|ed)?\s+as\b"
    r"|\b(?:is|are)\s+(?:[\w-]+\s+){0,3}said\s+to\b|\bdesignated\b"
    r"|^\s*what\s+(?:do|does)\s+.+\bcall\b|\bcalled\s+[\"'‘“]?[\w-]+[\"'’”]?\s*\??\s*$"
)


def _cue(*alternatives: str) -> re.Pattern[str]:
    return re.compile("|".join(rf"\b(?:{a})\b" for a in alternatives), re.I)


@dataclass(frozen=True, slots=True)
class IntentProfile:
    """Everything the system knows about one kind of question, in one place (issue 14).

    ``question_cues``: words in a question that ask for this kind of answer (the classifier
    tries the profiles in ``CLASSIFY_ORDER``); ``expansions``: the phrasing statutes use for
    it, appended to a retrieval query; ``rerank_cues``: phrases of a passage that answers it
    (a rerank feature); ``answer_language``: what a passage must say to answer it (the
    sufficiency rule; None: nothing in particular).
    """

    intent: Intent
    question_cues: re.Pattern[str] | None
    expansions: tuple[str, ...] = ()
    rerank_cues: tuple[str, ...] = ()
    answer_language: re.Pattern[str] | None = None


PROFILES: Mapping[Intent, IntentProfile] = {
    Intent.PUNISHMENT: IntentProfile(
        Intent.PUNISHMENT,
        re.compile(
            # "punishing" is left out: "laws punishing mutiny" names laws, not a penalty.
            r"\b(punish(?:ment|ments|able|ed|es)?|penalt\w*|sentence[ds]?|imprison\w*|fine[ds]?"
            # "How long can he be jailed?" (rule BI: the bare "jail" only, before)
            r"|jail(?:s|ed|ing)?|prison|consequences?"
            # "What can he get?", "How many years can the thief get?", "locked up" (rule BL)
            r"|what\s+(?:can|could|will|would|might|may)\s+(?:[\w'’-]+\s+){1,3}get"
            r"(?!\s+(?:back|from|out|rid|a\s+refund)\b)"
            r"|how\s+(?:long|many\s+years)\s+(?:can|could|will|would|might|may)\s+"
            r"(?:[\w'’-]+\s+){1,3}get|locked\s+up|behind\s+bars"
            # "What happens to someone who ...?", "what can happen to me?": the consequences
            # (Then AA); "what happened" asks what took place, not what follows.
            r"|what\s+(?:(?:can|could|will|would|may|might|should|shall)\s+)?happens?"
            r"\s+(?:to|if|when))\b",
            re.I,
        ),
        expansions=("punished with imprisonment fine",),
        rerank_cues=(
            "punished with", "punishable with", "imprisonment", "fine", "liable to", "sentence",
        ),
        answer_language=_cue(
            r"punish(?:ed|able)\s+(?:with|by|as|under|in|for)",
            r"imprison(?:ment|ed)",
            r"fined?",
            r"sentence\s+of\s+death",
            r"(?:with|by)\s+death",
            r"death\s+(?:penalty|sentence)",
            r"penalty",
            r"penalties",
            r"forfeit\w*",
        ),
    ),
    Intent.PROCEDURE: IntentProfile(
        Intent.PROCEDURE,
        re.compile(
            # "How does the IPC define X?" asks for a definition, "How does it apply to Y?" for
            # the scope and "How does X differ from Y?" for a comparison, not for steps.
            r"^\s*how (do|does|can|should|to|is|are)\b"
            r"(?!.*\b(defined?|defines|meant|mean|understood|differs?|distinguish\w*"
            r"|appl(y|ies) to|extends?)\b)"
            r"|\b(steps?|procedure|process|file an?|apply for)\b",
            re.I,
        ),
        expansions=("procedure court shall application",),
        rerank_cues=(
            "shall", "procedure", "application", "may apply", "petition", "court may",
            "magistrate",
        ),
        answer_language=_cue(
            r"shall\s+(?:be\s+)?(?:\w+\s+)?(?:made|filed|submitted|presented|produced|recorded"
            r"|reduced\s+to\s+writing|entered|signed|registered|forwarded|sent|issued|served|lodged"
            r"|delivered|file|submit|present|produce|record|register|forward|send|issue|serve"
            r"|lodge|deliver|inform|report|apply)",
            r"may\s+(?:\w+\s+)?(?:apply|file|present|make\s+an\s+application|appeal|move)",
            r"application",
            r"procedure",
            r"petition",
            r"complaint",
            r"appeal",
            r"in\s+the\s+manner",
            r"prescribed",
            r"within\s+\w+\s+(?:days|weeks|months|hours)",
            r"steps?",
        ),
    ),
    Intent.SCOPE: IntentProfile(
        Intent.SCOPE,
        re.compile(
            r"\b(extent|applicab\w*|appl(y|ies) to|scope|jurisdiction|extend(s|ed)?)\b", re.I
        ),
        expansions=("extends to applies to",),
        rerank_cues=("extends to", "applies to", "apply to", "shall apply", "whole of india"),
        answer_language=_cue(
            r"extends?",
            r"extended",
            r"extent",
            r"appl(?:y|ies|ied|icable|ication)",
            r"whole\s+of\s+india",
            r"jurisdiction",
            r"(?:within|beyond|outside)\s+india",
            r"territor\w*",
            r"in\s+force",
            r"citizens?",
            r"shall\s+not\s+affect",
        ),
    ),
    # "What is section 420 about?" / "What does s. 302 say?" ask for a provision's content,
    # not a definition; matched before the broad "what is" definition cue.
    Intent.GENERAL: IntentProfile(
        Intent.GENERAL,
        re.compile(
            # A provision as the one reference parser writes it ("section 420", "§ 302",
            # "s. 379", "IPC 420"), or a clause.
            rf"^\s*what (is|are|was|were|does|do) (the )?(?:{REFERENCE_PATTERN}|clause\s*\d)"
            r"|\bwhat (does|do|did) .+\b(say|says|state|provide|cover|deal with|prescribe"
            r"|require|contain|stipulate|lay down|pertain|concern|relate|discuss|address"
            r"|govern|talk about)\b"
            r"|\babout\s*\??\s*$",
            re.I,
        ),
    ),
    Intent.DEFINITION: IntentProfile(
        Intent.DEFINITION,
        re.compile(
            r"^\s*(what (is|are|does)\b|define\b|definition\b|meaning of\b|who (is|are)\b)"
            # The Code's own defining words (rules BI, BJ)
            rf"|{_DEFINING_WORDS}"
            r"|^\s*how (do|does) .+\bdefine\b"
            r"|\bwhat does .+ mean\b|\bis defined\b"
            r"|^\s*how (is|are) .+\b(defined|meant|understood)\b",
            re.I,
        ),
        expansions=("means is said to",),
        rerank_cues=("means", "is said to", "includes", "denotes", "defined", "deemed to"),
        answer_language=_cue(
            # "means" as a verb, not the noun in "by means of", "by unlawful means".
            r"(?<!by\s)(?<!any\s)(?<!unlawful\s)(?<!illegal\s)(?<!lawful\s)means?(?!\s+of\b)",
            r"meaning",
            r"defined(?:\s+as)?",
            r"definition",
            r"includes?",
            r"(?:is|are)\s+said\s+to",
            r"denotes?",
            r"deemed",
            r"commits?\s+the\s+offen[cs]e\s+of",
            r"designated",
            r"(?:is|are|be)\s+called",
            r"known\s+as",
            r"refers?\s+to",
            r"amounts?\s+to",
            r"constitutes?",
        ),
    ),
}  # fmt: skip
# Order matters: punishment cues beat definition cues ("What is the punishment for theft?"),
# and the first profile whose cues match wins.
CLASSIFY_ORDER: tuple[Intent, ...] = (
    Intent.PUNISHMENT,
    Intent.PROCEDURE,
    Intent.SCOPE,
    Intent.GENERAL,
    Intent.DEFINITION,
)


# Explicit definition cues; a bare "What is ...?" only asks for a definition when it is short.
_EXPLICIT_DEFINITION = re.compile(
    rf"\b(define|definition|meaning of|mean|meant|is defined|are defined|denote)\b"
    rf"|{_DEFINING_WORDS}",
    re.I,
)
# An act named after the question ("What is hurt according to the Indian Penal Code?") does
# not make a bare "What is X?" long (rule BJ).
_CLOSING_ACT = re.compile(
    r"\s+(?:under|in|according\s+to|as\s+per)\s+(?:the\s+)?(?:indian\s+penal\s+code|ipc"
    r"|penal\s+code|code|law)\s*[?.!]*\s*$",
    re.I,
)
_SHORT_QUESTION_WORDS = 8

# A statement ("Cancer cells process glucose faster ...", a claim to check) asks for no kind of
# answer: its cue words ("process", "sentence") are content, not a request. Keyword queries
# ("punishment for theft") are short and keep their cues.
_QUESTION_START = re.compile(
    r"^\s*(what|which|who|whom|whose|when|where|why|how|is|are|was|were|do|does|did|can|could"
    r"|should|shall|will|would|may|might|must|has|have|had|define|explain|describe|list|state"
    r"|tell|give|name|outline|summari[sz]e|compare|distinguish|in|under|to|for|if)\b",
    re.I,
)
# The openers of ``_QUESTION_START`` that are imperatives ("Define theft", "Tell me about
# robbery"): a request so opened may list things, each asked on its own (rule AL).
IMPERATIVE_OPENERS: Final = frozenset(
    {"define", "explain", "describe", "list", "state", "tell", "give", "name", "outline"}
    | {"summarise", "summarize"}
)


def question_opener(text: str) -> str | None:
    """The word that opens ``text`` as a question or request (``_QUESTION_START``: a wh-word, an
    auxiliary, an imperative such as "define" or "tell"), lower-cased; None when none does."""
    match = _QUESTION_START.match(text)
    return match.group(1).lower() if match else None


# A sentence has a finite verb or ends with a full stop; "punishment for cheating under
# section 420 IPC" is a keyword query, not a statement. Six words came with SciFact's claims
# (3bc380c), no measurement chose it; a shorter text is a statement only with both marks
# ("Theft is punishable with death."), which keyword queries ("theft punishment", "punishment
# for theft") never have: they end without a full stop (docs/EVALUATION.md, "Then S").
_STATEMENT_MIN_WORDS = 6
_SHORT_STATEMENT_MIN_WORDS = 3
_FINITE_VERB = re.compile(
    r"\b(is|are|was|were|has|have|had|be|been|can|cannot|may|might|will|would|does|do|did)\b",
    re.I,
)
_FULL_STOP = re.compile(r"\.\s*$")
# A short text about "it", "he" or "that" claims nothing the evidence could state without what
# it points to ("He is guilty.", "That is wrong."): it stays a question, as before "Then S".
_POINTS_AWAY = re.compile(r"^\s*(it|this|that|these|those|he|she|they|i|we|you|there|here)\b", re.I)


# A request is not a claim: "I would like to know more about this." and "Please summarise the
# document for me." end in a full stop but assert nothing the evidence could state (they were
# judged as statements, and the entailment model found them "stated"). First-person wishes and
# requests, and "please" anywhere; imperatives ("Explain ...", "Tell me ...") and "Can you ..."
# already open a question (``_QUESTION_START``).
_REQUEST = re.compile(
    r"^\s*(?:i(?:\s+would|'d|’d)\s+(?:like|love|want)|i\s+(?:want|wish|need|hope)"
    r"|let\s+me\s+know|help\s+me|show\s+me|kindly)\b"
    r"|\bplease\b",
    re.I,
)


def is_statement(text: str) -> bool:
    """True for a declarative sentence, a claim to check: no "?", no question opener, not a
    request ("I would like to know ...", "Please ..."), and of six or more words with a finite
    verb or a closing full stop, or of three to five words with both and a subject of its own
    ("Theft is punishable with death.", not "He is guilty.")."""
    words = len(text.split())
    if (
        "?" in text
        or words < _SHORT_STATEMENT_MIN_WORDS
        or _QUESTION_START.search(text)
        or _REQUEST.search(text)
    ):
        return False
    verb, stop = bool(_FINITE_VERB.search(text)), bool(_FULL_STOP.search(text))
    if words >= _STATEMENT_MIN_WORDS:
        return verb or stop
    return verb and stop and not _POINTS_AWAY.search(text)


def classify_intent(question: str) -> Intent:
    """Classify a question into an intent with ordered regular-expression cues.

    "What is theft?" asks for a definition; "What is considered an escape from lawful custody
    for a State prisoner?" (longer than eight words, no explicit cue) is a general question,
    and so is a statement (a claim to verify), whatever words it contains.
    """
    if is_statement(question):
        return Intent.GENERAL
    # A request is classified as the question it asks (the text itself when none opens it):
    # "Can you define theft?" asks "What is theft?", "Please define the punishment for theft"
    # a punishment (rule AV), and so does any request: "Explain theft." asks "What is theft?",
    # "Explain how robbery is punished." a punishment (rule BD).
    question = asked_question(question)
    for intent in CLASSIFY_ORDER:
        pattern = PROFILES[intent].question_cues
        if pattern is not None and pattern.search(question):
            if (
                intent is Intent.DEFINITION
                and len(_CLOSING_ACT.sub("", question).split()) > _SHORT_QUESTION_WORDS
                and not _EXPLICIT_DEFINITION.search(question)
            ):
                return Intent.GENERAL
            return intent
    return Intent.GENERAL


# An overview question (rule BF): it asks about a thing in general, "Tell me about cheating.",
# "I would like to know more about cheating.", "What does the IPC say about cheating?", "What is
# the law on theft?". Whoever asks so about an offence wants what it is and what it costs, so
# the extractive generator answers it as "What is X, and how is it punished?"
# (``synthesis.extractive.question_aspects``). Each frame needs a word after it: "Tell me
# about it." names nothing of its own, and points away ("this", "it") are left to the
# conversation rules.
_AMOUNT = r"(?:(?:a\s+(?:little|bit)|some\s*thing|more|everything|all)\s+)?"
_ABOUT_A_THING = r"about\s+(?!(?:it|this|that|these|those|them)\b)\w"
_OVERVIEW = re.compile(
    rf"\btell\s+(?:me|us)\s+{_AMOUNT}{_ABOUT_A_THING}"
    rf"|\b(?:to|me)\s+(?:know|learn)\s+{_AMOUNT}{_ABOUT_A_THING}"
    r"|\binformation\s+(?:on|about|regarding)\s+\w"
    r"|^\s*what\s+(?:does|do)\s+.+?\bsay\s+(?:about|on|regarding)\s+\w"
    r"|\blaws?\s+(?:on|about|regarding|concerning|relating\s+to)\s+\w",
    re.I,
)


def asks_overview(question: str) -> bool:
    """Whether ``question`` asks about a thing in general (``_OVERVIEW``, rule BF): "Tell me
    about theft.", "What does the law say about rioting?". Its intent decides whether the
    overview is answered as one: ``synthesis.extractive.question_aspects`` reads both. A
    statement asks nothing ("The law on theft covers spouses." is a claim to check)."""
    return bool(_OVERVIEW.search(question)) and not is_statement(question)
