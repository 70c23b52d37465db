"""What a question asks, analysed once per request and handed to every stage that needs it.

Retrieval, sufficiency, promotion, comparison and generation all read the question; each used
to run the key-term extractor, the intent classifier and the follow-up rules on it again
(5–8 times a request). ``analyse_question`` does it once and returns a frozen
``QuestionAnalysis``; the stages read its fields. Pure: no I/O. The question is first read
as a reader sees it (``text.as_read``: NFKC, look-alike letters folded), once, for all of them.

    question (as read) + history ──► follow-up? ──► retrieval query (previous question folded in)
                                 ──► intent (of the question; of the query when it has none)
                                 ──► key terms ──► focus (the question, or the query when the
                                                    question names nothing)
                                 ──► acts asked about (the question's, else the focus's)
                                 ──► comparison (not for a follow-up) ──► a query per term
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from services.common.intent import (
    IMPERATIVE_OPENERS,
    Intent,
    classify_intent,
    is_statement,
    question_opener,
)
from services.common.language.conversation import (
    conversation_spans,
    is_pleasantry,
    is_request_frame,
    opens_request,
)
from services.common.language.key_terms import KeyTerms, extract_key_terms
from services.common.language.references import asked_acts, parse_section_refs
from services.common.language.sentences import sentences
from services.common.language.text import as_read, normalise_query
from services.synthesis.comparison import Comparison, find_comparison
from services.synthesis.generation import Turn
from services.synthesis.limits import MAX_RETRIEVAL_QUERY_CHARS

_CONTINUATION = re.compile(
    r"^\s*(and|but|also|so|then|what about|how about|what if|same)\b", re.IGNORECASE
)
# Where a multi-part question splits into questions of their own: a semicolon, or "and",
# followed by a question word ("How is X punished, and how is Y punished?"). Unlike the
# extractive generator's clause split, "the punishment for cheating and dishonestly inducing
# delivery" stays one part: "and" must open a new question. A bare comma never splits: "If a
# mugger punches the person he's robbing, what can he get?" is one question.
# "when" only before an auxiliary ("... and when is rioting an offence?", rule AX): "... and
# when the thief is armed" is a clause of the question before it.
_QUESTION_WORD = (
    r"(?:how|what|who|whom|whose|which|why|where|is|are|can|does|do|will|should"
    r"|when(?=\s+(?:is|are|was|were|does|do|did|can|could|will|would|should|may|might|must"
    r"|shall)\b))\b"
)
# A request opens a new part there too ("Define forgery, and tell me how cheating is
# punished.": rule BB), as ``conversation.opens_request`` reads one.
_BREAK = re.compile(r"\s*(?:;\s*(?:and\s+|also\s+)?|,?\s+and\s+(?:also\s+)?)", re.IGNORECASE)
_OPENS_QUESTION = re.compile(rf"^{_QUESTION_WORD}", re.IGNORECASE)
# The wh-words: a separate question sentence opens with one, and so does a list's next question.
_WH_WORD = r"(?:what|which|who|whom|whose|when|where|why|how)\b"
# In a sentence that splits at ", and" or ";" (above), a list's earlier questions are joined by
# bare commas: "What is theft, what is extortion, and what is robbery?" (rule U). Only before a
# wh-word, and only in such a list: "What if someone steals, what is the punishment?" stays one.
_LIST_COMMA = re.compile(rf"\s*,\s*(?={_WH_WORD})", re.I)
_ANAPHORA = re.compile(
    r"\b(it|its|this|these|those|they|them|their|such|the same|the above|said)\b", re.IGNORECASE
)
# Separate question sentences are parts only when each opens with one of these: a yes/no
# sentence after a question mostly applies it ("What counts as sedition? Is stirring up hatred
# against the government enough?": every such input of the tuned sets, docs/EVALUATION.md,
# "Then S"), and asks nothing on its own.
_WH_QUESTION = re.compile(rf"^{_WH_WORD}", re.IGNORECASE)
# A list of things asked about in one frame (rule AI, docs/EVALUATION.md "Then AI"): "What are
# the punishments for theft, robbery and dacoity?" asks the frame once per thing. The frame
# names nothing itself and either ends in one of these prepositions ("... for", "... by") or is
# a wh-word and a verb ("How are theft and robbery punished?", "What are theft and robbery?":
# rule AK).
_LIST_PREPOSITIONS = frozenset({"for", "of", "about", "by", "on", "regarding", "concerning"})
_LIST_AUXILIARIES = {"is": "is", "are": "is", "was": "was", "were": "was"}
_ARTICLES = frozenset({"the", "a", "an"})
_LIST_TOKEN = re.compile(r",|[^\s,?]+")
# Each thing listed is one or two words, all of them topic words, and all things as long
# (rule AK): "wrongful gain and wrongful loss" is a list; "cheating and dishonestly inducing
# delivery" (s.420's title), "theft of cattle and sheep", "rash and negligent driving" and
# "murder and culpable homicide not amounting to murder" are not (the question stays whole),
# unless the frame's preposition opens each later thing again (``MAX_REPEATED_ITEM_WORDS``).
MAX_LIST_ITEM_WORDS = 2
# Things whose frame's preposition is repeated before each later one ("for murder and for
# culpable homicide not amounting to murder", rule BG) are a list at any lengths up to this many
# words each, when each opens and closes with a topic word: the repeated preposition says where
# each thing starts, which "rash and negligent driving" does not.
MAX_REPEATED_ITEM_WORDS = 6
# A later question of a multi-part one that points back with one "it" or "its" asks about the
# first one's topic ("What is extortion? How is it punished?": rule AS), when one run of at
# most this many words names it.
_IT = re.compile(r"\b(?:it|its)\b", re.IGNORECASE)
_ITS_THING = re.compile(r"\bits\s+([a-z]+)\b(?!\s+of\b)", re.IGNORECASE)
MAX_TOPIC_WORDS = 4


@dataclass(frozen=True, slots=True)
class QuestionAnalysis:
    """One question, analysed.

    ``question`` is the request's question, stripped. ``retrieval_query`` folds the previous
    user question in for a follow-up ("and for extortion?"). ``focus`` is what the evidence
    must be about: the question when it names something itself, else the retrieval query.
    ``key_terms`` are the question's, ``focus_terms`` the focus's (the same object when the
    focus is the question). ``comparison`` is set for "difference between X and Y" questions.
    """

    question: str
    retrieval_query: str
    focus: str
    intent: Intent
    key_terms: KeyTerms
    focus_terms: KeyTerms
    follow_up: bool = False
    comparison: Comparison | None = None
    # The focus split into its questions (``question_parts``): one, or several when multi-part.
    parts: tuple[str, ...] = ()
    # The acts the question asks about (``references.asked_acts``): those its own words name,
    # else those of the focus (a follow-up's folded-in question: "and under the BNS?" names its
    # own).
    acts: tuple[str, ...] = ()
    # How many questions the focus asks, for the limit on them (``questions_asked``): at least
    # its parts, and every question sentence whether or not it is a part of its own.
    asked: int = 1
    # Whether the focus is a statement, a claim to check (``intent.is_statement``), not a
    # question: judged by the entailment model, and reported as the response's input_kind.
    statement: bool = False

    @property
    def queries(self) -> tuple[str, ...]:
        """Every retrieval query: the retrieval query, then one per compared term."""
        extra = self.comparison.queries if self.comparison is not None else ()
        return (self.retrieval_query, *extra)

    @property
    def answer_terms(self) -> KeyTerms:
        """The terms an answer must address: the question's, or the focus's when the question
        names nothing a passage could match ("and the punishment?"); for a comparison, the
        compared terms' (``Comparison.answer_terms``: "differ" is in no provision)."""
        if self.comparison is not None:
            return self.comparison.answer_terms
        if self.key_terms.effective or self.key_terms.sections:
            return self.key_terms
        return self.focus_terms


def question_parts(question: str, lists: bool = True) -> tuple[str, ...]:
    """The questions a multi-part question asks, each on its own, in order; else ``(question,)``.

    Separate question sentences ("What is theft? What is robbery?") are parts when every
    sentence (``sentences.sentences``) is a question ending in "?" that opens with a wh-word,
    names something itself and, after the first, does not point back (once its "it" and "its"
    are read as the first sentence's topic, rule AQ); each is then split as
    below. Otherwise the text is read as one, as below: "What counts as sedition? Is stirring
    up hatred against the government enough?" (a yes/no sentence applying the one before) and
    "Our maid stole gold. Is it treated more seriously?" (context) stay whole.

    With ``lists`` (not for a comparison, whose compared terms are retrieved each on its own
    already), a question that lists the things it asks about in one frame is asked once per
    thing (``_list_parts``).
    """
    asked = sentences(question.strip())
    if len(asked) > 1:
        # "What is extortion? How is it punished?": the later ones' "it" is the first's topic
        # (rule AQ), when the first asks a question.
        topic = _topic(asked[0]) if _WH_QUESTION.match(asked[0]) else None
        asked = [asked[0], *(_resolved(sentence, topic) for sentence in asked[1:])]
        if _separate_questions(asked):
            return tuple(part for sentence in asked for part in _sentence_parts(sentence, lists))
    return _sentence_parts(question, lists)


def questions_asked(question: str, parts: Sequence[str] | None = None, lists: bool = True) -> int:
    """How many questions ``question`` asks, for the limit on them: its parts
    (``question_parts``, or ``parts`` when the caller has them already), or, when more, its
    question sentences (those ending in "?") each counted with its own ", and" parts (and its
    list's things, with ``lists``), whether or not they are answered as parts."""
    in_sentences = sum(
        len(_sentence_parts(s, lists)) for s in sentences(question.strip()) if s.endswith("?")
    )
    split = question_parts(question, lists) if parts is None else parts
    return max(len(split), in_sentences, 1)


def _separate_questions(asked: Sequence[str]) -> bool:
    """Whether these sentences are questions of their own (see ``question_parts``)."""
    for index, sentence in enumerate(asked):
        terms = extract_key_terms(sentence)
        if not (
            sentence.endswith("?")
            and _WH_QUESTION.match(sentence)
            and (terms.effective or terms.sections)
            and not (index and _ANAPHORA.search(sentence))
        ):
            return False
    return True


def _sentence_parts(question: str, lists: bool = True) -> tuple[str, ...]:
    """The questions one sentence asks, split where ", and" or ";" opens a new one with a
    question word or a request (``_asks``; the request since rule BB).

    "How is trafficking of persons punished, and how is sexual harassment punished?" asks two:
    each needs its own answering sentence (issue 13); so does "Define forgery, and tell me how
    cheating is punished." (BB). In such a sentence a comma before a
    wh-word splits too when the first piece opens with one ("What is theft, what is extortion,
    and what is robbery?" asks three; rule U). A piece of fewer than three words is not a
    question of its own and stays with the one before it. A later part's "it" and "its" are the
    first part's topic (``_resolved``, rule AQ): "What is criminal conspiracy and how is it
    punished?" asks "How is criminal conspiracy punished?" second. The question stays whole
    when its first part opens with neither a question word nor a request, when a later part
    still points back
    ("they", "such"), or when a part names nothing a passage could match. A sentence that does
    not split so may still list what it asks about (``_list_parts``, with ``lists``).
    """
    pieces = [p.strip(" ,;?").rstrip(".!") for p in _split_at_breaks(question.strip())]
    if len(pieces) > 1 and _WH_QUESTION.match(pieces[0]):
        pieces = [item for piece in pieces for item in _LIST_COMMA.split(piece)]
    parts: list[str] = []
    for piece in pieces:
        if parts and len(piece.split()) < 3:
            parts[-1] = f"{parts[-1]} and {piece}"
        elif piece:
            parts.append(piece)
    # "When the law says 'he' ...": a clause; a request asks ("Define forgery, ...": rule BB)
    asks = bool(parts) and _asks(parts[0])
    if len(parts) > 1 and asks:
        # "What is criminal intimidation and what is its punishment?" (rule AQ)
        topic = _topic(parts[0])
        parts = [parts[0], *(_resolved(part, topic) for part in parts[1:])]
    whole = (
        len(parts) < 2
        or not asks
        or any(_ANAPHORA.search(p) for p in parts[1:])
        or not all(extract_key_terms(p).effective for p in parts)  # "... and what is it?"
    )
    if whole:
        listed = _list_parts(question) if lists and len(parts) < 2 else None
        return listed or (question.strip(),)
    return tuple(f"{p[0].upper()}{p[1:]}?" for p in parts)


def _asks(text: str) -> bool:
    """Whether ``text`` opens as a question (a question word) or a request (rule BB)."""
    return bool(_OPENS_QUESTION.match(text) or opens_request(text))


def _split_at_breaks(question: str) -> list[str]:
    """``question`` cut at each ", and" or ";" (``_BREAK``) that a question word or a request
    frame follows (rule BB for the request); the breaks themselves left out."""
    pieces: list[str] = []
    start = 0
    for found in _BREAK.finditer(question):
        if _asks(question[found.end() :]):
            pieces.append(question[start : found.start()])
            start = found.end()
    pieces.append(question[start:])
    return pieces


def _list_parts(question: str) -> tuple[str, ...] | None:
    """The questions a list question asks, one per thing listed; None when it is none (rule AI).

    "What are the punishments for theft, robbery and dacoity?" asks "What are the punishments
    for theft?", "... for robbery?" and "... for dacoity?"; "How are theft and robbery
    punished?" asks "How is theft punished?" and "How is robbery punished?". The words before
    the list and after it name nothing a passage could match (``extract_key_terms``); before it
    they end in a preposition of ``_LIST_PREPOSITIONS``, or are a wh-word and "is"/"are"/
    "was"/"were" ("What are theft and robbery?": "What is theft?", "What is robbery?"), or, in
    a request, an imperative alone ("Define theft and robbery.", rule AL) or a request frame
    alone ("Can you explain theft and robbery?", rule AN); each part keeps the text's closing
    mark. The list is ``_listed_things``. A question naming a section is left to the reference
    parser ("IPC 379 and 380"); "or" joins alternatives, not a list.
    """
    text = question.strip()
    opener = question_opener(text)
    # "Define theft and robbery." (rule AL); "Please explain theft and robbery." (rule AN)
    request = opener in IMPERATIVE_OPENERS or opens_request(text)
    if not ((text.endswith("?") and _OPENS_QUESTION.match(text)) or request):
        return None
    if parse_section_refs(text):
        return None
    mark = text[-1] if text[-1] in "?.!" else ""
    around = _around_topic(text)
    if around is None:
        return None
    prefix, middle, suffix = around
    while prefix and prefix[-1].lower() in _ARTICLES:  # "for the theft and the robbery"
        prefix.pop()
    if not prefix or any(token == "," for token in prefix + suffix):
        return None
    head = prefix[-1].lower()
    by_preposition = head in _LIST_PREPOSITIONS
    wh_verb = len(prefix) == 2 and _WH_QUESTION.match(prefix[0]) and head in _LIST_AUXILIARIES
    # "Define theft and robbery"; "Can you explain theft and robbery?" (a request frame, AN)
    imperative = (request and len(prefix) == 1) or is_request_frame(" ".join(prefix))
    if not (by_preposition or wh_verb or imperative):
        return None
    things = _listed_things(middle, head if by_preposition else None)
    if things is None:
        return None
    if wh_verb and not by_preposition:  # "How are theft and robbery punished?": "How is ..."
        prefix = [prefix[0], _LIST_AUXILIARIES[head]]
    frame_before, frame_after = " ".join(prefix), " ".join(suffix)
    return tuple(
        " ".join(filter(None, (frame_before, thing, frame_after))) + mark for thing in things
    )


def _around_topic(question: str) -> tuple[list[str], list[str], list[str]] | None:
    """``question``'s words and commas (its closing mark left out) in three runs: before its
    first topic word, from it to its last, and after; None when it has no topic word. A topic
    word is a key term that is not a word of the conversation ("kindly", "know" in "I would
    like to know about")."""
    text = question.strip().rstrip("?.!")
    found = list(_LIST_TOKEN.finditer(text))
    talk = conversation_spans(text)
    topical = [
        match.group() != ","
        and not any(start <= match.start() and match.end() <= end for start, end in talk)
        and bool(extract_key_terms(match.group()).terms)
        for match in found
    ]
    if not any(topical):
        return None
    tokens = [match.group() for match in found]
    first = topical.index(True)
    last = len(tokens) - 1 - topical[::-1].index(True)
    return tokens[:first], tokens[first : last + 1], tokens[last + 1 :]


def _topic(question: str) -> str | None:
    """What a question is about, when one run of words names it: from its first topic word to
    its last, at most ``MAX_TOPIC_WORDS`` words and no comma ("criminal intimidation" in "What is
    criminal intimidation"); None otherwise."""
    around = _around_topic(question)
    if around is None:
        return None
    run = around[1]
    if "," in run or len(run) > MAX_TOPIC_WORDS:
        return None
    return " ".join(run)


def _resolved(question: str, topic: str | None) -> str:
    """``question`` with its one "it" or "its" read as ``topic`` (rule AS): "How is it
    punished?" after "What is extortion" is "How is extortion punished?". Unchanged without a
    topic, with more than one "it" (rule AR), or when it points back otherwise ("they", "such",
    "the same"): such a question is not asked alone."""
    if topic is None or len(_IT.findall(question)) != 1:
        return question  # none, or several (ipc-110: "how is it punished when it is not ...")
    # "its punishment" is "the punishment of criminal intimidation"; "it" the topic itself.
    resolved = _ITS_THING.sub(lambda m: f"the {m.group(1)} of {topic}", question)
    resolved = _IT.sub(lambda m: f"{topic}'s" if m.group(0).lower() == "its" else topic, resolved)
    return question if _ANAPHORA.search(resolved) else resolved


def _listed_things(middle: Sequence[str], preposition: str | None) -> list[str] | None:
    """The things of a list's tokens (words and commas), or None when they are no list: two or
    more, joined by commas and a last "and", each of one or two topic words (a leading article,
    or the frame's ``preposition`` repeated, aside), all as long (rules AI, AK); or, when that
    preposition opens every thing after the first ("for murder and for culpable homicide not
    amounting to murder"), each of up to ``MAX_REPEATED_ITEM_WORDS`` words opening and closing
    with a topic word, of any lengths (rule BG)."""
    items: list[list[str]] = [[]]
    for token in middle:
        if token == "," or token.lower() == "and":
            if items[-1]:
                items.append([])
        else:
            items[-1].append(token)
    joins = [token.lower() for token in middle if token == "," or token.lower() == "and"]
    if len(items) < 2 or not joins or joins[-1] != "and":
        return None
    # "for murder and for culpable homicide ...": the preposition opens every later thing (BG)
    repeated = preposition is not None and all(
        item[0].lower() == preposition for item in items[1:] if item
    )
    limit = MAX_REPEATED_ITEM_WORDS if repeated else MAX_LIST_ITEM_WORDS
    things = []
    for item in items:
        while item and (item[0].lower() in _ARTICLES or item[0].lower() == preposition):
            item = item[1:]
        if not item or len(item) > limit:
            return None
        # Every word a topic word; after a repeated preposition, the first and the last (BG).
        topical = (item[0], item[-1]) if repeated else item
        if not all(extract_key_terms(word).terms for word in topical):
            return None
        things.append(" ".join(item))
    if not repeated and len({len(thing.split()) for thing in things}) > 1:
        # "rash and negligent driving", "false weights and measures": a word beside a longer
        # thing may share its head, so things of unequal length are not a list (rule AK).
        return None
    return things


def recent_turns(history: Sequence[Turn], max_turns: int) -> tuple[Turn, ...]:
    """The turns a request is answered with: the last ``max_turns`` of ``history`` (none for 0;
    the response's ``history_turns_used`` is how many)."""
    return tuple(history)[-max_turns:] if max_turns > 0 else ()


def previous_user_question(history: Sequence[Turn], max_turns: int) -> str | None:
    """The last user turn among the last ``max_turns`` turns, if any."""
    for turn in reversed(recent_turns(history, max_turns)):
        if turn.role == "user" and turn.text.strip():
            return as_read(turn.text).strip()
    return None


def fold_previous(previous: str, question: str, limit: int = MAX_RETRIEVAL_QUERY_CHARS) -> str:
    """A follow-up's retrieval query: the previous question, then this one, within retrieval's
    query limit. This question always goes whole; of a long previous turn (up to
    ``MAX_TURN_CHARS``) only its last words that fit are folded in, cut at a word boundary,
    the previous turn NFKC-normalised as retrieval reads it. The response's ``retrieval_query``
    shows what was searched."""
    # Measured as retrieval searches it (NFKC can lengthen text: "…" is three characters).
    previous = normalise_query(previous)
    room = limit - len(normalise_query(question)) - 1
    if room <= 0:
        return question
    if len(previous) > room:
        start = len(previous) - room
        if not previous[start - 1].isspace():  # mid-word: begin at the next whole word
            following = previous.find(" ", start)
            start = len(previous) if following < 0 else following + 1
        previous = previous[start:].strip()
    return f"{previous} {question}" if previous else question


def is_follow_up(question: str, terms: KeyTerms | None = None) -> bool:
    """Elliptical follow-up: starts with a continuation, points back, or names nothing itself.

    Greetings and thanks alone ("Thanks!", "ok", "Good evening, how are you?") name nothing but
    ask nothing either, not even about the turn before: never a follow-up (refused, not the
    previous question asked again)."""
    if is_pleasantry(question):
        return False
    terms = terms if terms is not None else extract_key_terms(question)
    return bool(
        _CONTINUATION.search(question)
        or _ANAPHORA.search(question)
        or not (terms.terms or terms.sections)
    )


def analyse_question(
    question: str, history: Sequence[Turn] = (), history_turns: int = 0
) -> QuestionAnalysis:
    """Analyse ``question`` (with up to ``history_turns`` earlier turns of ``history``), read
    as a reader sees it (``text.as_read``: invisible format marks left out, NFKC, look-alike
    letters folded) by everything that follows: intent, retrieval query, key terms."""
    question = as_read(question).strip()
    terms = extract_key_terms(question)
    previous = previous_user_question(history, history_turns)
    follow_up = previous is not None and is_follow_up(question, terms)
    retrieval_query = fold_previous(previous, question) if previous and follow_up else question
    intent = classify_intent(question)
    if follow_up and intent is Intent.GENERAL:
        intent = classify_intent(retrieval_query)
    if terms.terms or terms.sections:
        focus, focus_terms = question, terms
    else:
        focus = retrieval_query
        focus_terms = terms if focus == question else extract_key_terms(focus)
    comparison = None if follow_up else find_comparison(question, intent)
    parts = question_parts(focus, lists=comparison is None)
    return QuestionAnalysis(
        question=question,
        retrieval_query=retrieval_query,
        focus=focus,
        intent=intent,
        key_terms=terms,
        focus_terms=focus_terms,
        follow_up=follow_up,
        comparison=comparison,
        parts=parts,
        asked=questions_asked(focus, parts, lists=comparison is None),
        acts=asked_acts(question) or asked_acts(focus),
        statement=is_statement(focus),
    )
