"""Extractive generator: deterministic offline answers quoted sentence by sentence from evidence."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from services.common.evidence import Chunk, ScoredChunk
from services.common.intent import Intent, asks_overview, classify_intent
from services.common.language.key_terms import (
    STOP_WORDS,
    KeyTerms,
    chunk_section,
    chunk_stems,
    extract_key_terms,
    text_stems,
)
from services.common.language.names import names_beyond_question
from services.common.language.provisions import list_spans, opens_proviso, operative_positions
from services.common.language.sentences import sentences
from services.common.language.text import SOURCE_NOTES, source_heading, stem
from services.common.refusal import REFUSAL
from services.synthesis.comparison import (
    choice_answer_type,
    term_sections,
    term_stems,
    titled_with,
)
from services.synthesis.generation import GenerationRequest, GenerationResult
from services.synthesis.sources import RelationKind, SourceRelation, relate
from services.synthesis.sufficiency import has_intent_language, states_answer_type

_TRAILING = re.compile(r"[\s.;:,—–-]+$")
# Characters a source heading must not carry: sentence ends would split it (and an unfinished
# piece is no list introduction), brackets would read as a citation.
_HEADING_BREAKS = re.compile(r"[.!?…\[\]:;]+")
# Where a compound question splits into clauses: "What is X and how is it punished?".
_CLAUSE = re.compile(r"\s*(?:[,;]|\band\b|\balso\b)\s*", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class ExtractiveOptions:
    """Selection knobs; the defaults give 1-3 focused sentences (4 in synthesis mode)."""

    max_sentences: int = 3
    synthesis_max_sentences: int = 4
    # A sentence is kept only if it scores at least this share of the best sentence's score.
    relative_threshold: float = 0.85
    # Synthesis mode accepts weaker sentences so that several documents can be drawn on.
    synthesis_relative_threshold: float = 0.7
    # MMR trade-off between relevance (1.0) and novelty against already chosen sentences.
    mmr_lambda: float = 0.7
    duplicate_similarity: float = 0.8
    # In synthesis mode, a sentence from a document already quoted loses this much.
    repeat_document_penalty: float = 0.15
    weight_terms: float = 0.45
    weight_intent: float = 0.25
    weight_title: float = 0.15
    weight_retrieval: float = 0.15
    # Added: this weight x the answerability model's P(answers) for the sentence's chunk, when
    # the model scored the request (SYNTHESIS_EXTRACTIVE_ANSWERABILITY_WEIGHT).
    weight_answerability: float = 0.0
    # Long sentences lose up to this much, so a focused provision beats a long proviso.
    max_length_penalty: float = 0.05
    long_sentence_words: int = 60
    min_content_words: int = 3
    # When every chosen sentence comes from one document, the best sentence of another document
    # that adds a question term none of them has is appended (a bridge or comparison question
    # needs both documents), if it scores at least this share of the best sentence's score.
    complement_threshold: float = 0.5
    # The complement's first choice, when set and the answerability model scored the request:
    # the best sentence of another document whose chunk scores at least this P(answers), even
    # if it adds no question word (a bridge document: "His small oil company was bought out by
    # Standard Oil" answers "... sold his oil company to whom?" better than the first
    # document's word-sharing sentence). None: off.
    complement_answering_at: float | None = None
    # In synthesis mode, each document that gave 2+ passages contributes its best sentence when
    # that scores at least ``complement_threshold`` of the best sentence's score. Off: on the
    # tune sets it cost SQuAD's even half 28 citations with no supporting one more, for one gold
    # passage over 2 IPC golden answers (docs/EVALUATION.md).
    synthesis_one_per_source: bool = False
    # A bridge: when a quoted sentence names another evidence document by its title (and the
    # question does not), that document's best sentence is quoted too ("... was bought out by
    # Standard Oil" names the page that answers the rest of the question), at most
    # ``bridge_max`` documents per answer (SYNTHESIS_EXTRACTIVE_BRIDGE_TITLES; on since rule
    # 5bbc6f2 / B': docs/EVALUATION.md, "Quoting the document an answer names").
    bridge_titles: bool = True
    bridge_max: int = 2
    # When the question names a section, its operative text (its first passages before a
    # proviso or Explanation, provisions.operative_positions) is quoted first, before the best
    # of the rest: a proviso alone misled ("Provided further that any fine ... shall be paid
    # to the victim" for s.376's punishment). SYNTHESIS_OPERATIVE_TEXT.
    operative_first: bool = True
    # A statute list is quoted whole, its lead-in and every item the evidence holds, as one
    # choice made on its lead-in; an item is not quoted apart from its lead-in, nor a lead-in
    # whose items the evidence lacks except beside another quote ("... designated as
    # "grievous": Emasculation." alone named one kind of eight). SYNTHESIS_WHOLE_LISTS.
    whole_lists: bool = True
    # A quote keeps its final ':' or ';' (and the next quote starts a line), so that a reader
    # sees the text goes on; off, every quote ends with a full stop.
    # SYNTHESIS_EXTRACTIVE_KEEP_CLAUSE_MARKS.
    keep_clause_marks: bool = True
    # To an answer quoting statute sections, the second-document complement appends another
    # section only when the question names it by its title: the title's content words, less
    # "punishment", "penalty" or "definition", are all question terms ("Punishment for
    # extortion" for "... for theft and for extortion?"). A section that merely uses a question
    # word is another provision, not the other half of the question ("Is sedition punishable
    # with death?" was answered with s.124A and s.304's "... intention of causing death";
    # s.304A, "Causing death by negligence", would have been next).
    # SYNTHESIS_EXTRACTIVE_COMPLEMENT_BY_TITLE. Off: on the plain tune set the complement
    # brought a gold section to four answers it now left out (docs/EVALUATION.md, "Then L").
    complement_by_title: bool = False
    # A multi-part question first gets, for each part, the sentence the answerability model
    # finds answering that part (``part_answers``), before selection by score: a part's answer
    # is chosen by meaning, not by the words the parts share (SYNTHESIS_EXTRACTIVE_PART_ANSWERS;
    # docs/EVALUATION.md, "Then T").
    part_answers_first: bool = True
    # When set and the answerability model scored the request (and the question names no
    # section, which the model cannot read): once some candidate's chunk scores at least this
    # P(answers), the sentences whose chunk scores below it are not quoted
    # (SYNTHESIS_EXTRACTIVE_ANSWERING_FLOOR; docs/EVALUATION.md, "Then V"). None: off.
    answering_floor: float | None = None


@dataclass(frozen=True, slots=True)
class _Unit:
    position: int  # index of the chunk in the evidence list
    piece: int  # index of the sentence inside the chunk's text
    sentence_index: int  # the chunk's position in its document
    text: str
    semantic_id: str
    doc_id: str
    stems: frozenset[str]
    score: float
    aspects: frozenset[Intent] = frozenset()  # the asked intents whose language it carries
    title: frozenset[str] = frozenset()  # stems of its section's title
    statute: bool = False  # from a statute section (act and section known)
    section: str = ""  # its section, as ``chunk_section`` writes it
    lone: bool = False  # a list's lead-in whose items the evidence lacks (``whole_lists``)
    # Every sentence it quotes, with its passage's id, in order: the sentence itself, or a
    # list's lead-in and items (``whole_lists``).
    parts: tuple[tuple[str, str], ...] = ()

    @property
    def quoted(self) -> tuple[tuple[str, str], ...]:
        """(sentence, semantic id) of every sentence the unit quotes, in order."""
        return self.parts or ((self.text, self.semantic_id),)


# The intents an overview question may have to be answered as one (rule BF): a request reads as
# a definition (rule BD), "What does the IPC say about X?" as general.
_OVERVIEW_INTENTS: frozenset[Intent] = frozenset({Intent.DEFINITION, Intent.GENERAL})


def question_aspects(question: str, intent: Intent) -> tuple[Intent, ...]:
    """The intents a question asks about, in the order it asks: one, or several when compound.

    Each clause of each sentence is classified on its own, so "What is criminal conspiracy and
    how is it punished?" and "What is theft? How is it punished?" ask for a definition, then a
    punishment, while "What is the punishment for cheating and dishonestly inducing delivery?"
    asks only for a punishment. The whole question's ``intent`` is always among them, but for
    an overview question ("Tell me about cheating.", "What does the IPC say about cheating?";
    ``intent.asks_overview``) whose intent is a definition or none in particular and which asks
    for nothing else: it asks for a definition, then a punishment (rule BF).
    """
    aspects: list[Intent] = []
    for clause in (c for sentence in sentences(question) for c in _CLAUSE.split(sentence)):
        found = classify_intent(clause) if len(clause.split()) >= 2 else Intent.GENERAL
        if found is not Intent.GENERAL and found not in aspects:
            aspects.append(found)
    if (
        intent in _OVERVIEW_INTENTS
        and set(aspects) <= {Intent.DEFINITION}
        and asks_overview(question)
    ):
        # "Tell me about cheating.": what it is, then how it is punished (rule BF).
        return (Intent.DEFINITION, Intent.PUNISHMENT)
    if intent not in aspects:
        aspects.append(intent)
    return tuple(aspects) if len(aspects) > 1 else (intent,)


@dataclass(frozen=True, slots=True)
class _Lists:
    """The statute lists in the evidence (``whole_lists``; provisions.list_spans): each
    passage of a list whose items the evidence holds, by (doc id, position), with its lead-in's
    (doc id, position); and the lead-ins whose items it lacks (``lone``), which are not quoted."""

    member: Mapping[tuple[str, int], tuple[str, int]] = field(default_factory=dict)
    lone: frozenset[tuple[str, int]] = frozenset()

    @classmethod
    def of(cls, evidence: tuple[ScoredChunk, ...]) -> _Lists:
        texts: dict[str, dict[int, str]] = {}
        for scored in evidence:
            chunk = scored.chunk
            if chunk.act and chunk.section:
                texts.setdefault(chunk.doc_id, {})[chunk.sentence_index] = chunk.text
        member: dict[tuple[str, int], tuple[str, int]] = {}
        lone: set[tuple[str, int]] = set()
        for doc_id, own in texts.items():
            for span in list_spans(own):
                if len(span) == 1:
                    lone.add((doc_id, span.start))
                for position in span if len(span) > 1 else ():
                    member[(doc_id, position)] = (doc_id, span.start)
        return cls(member, frozenset(lone))


def _list_unit(parts: list[tuple[_Unit, bool]]) -> _Unit | None:
    """One unit quoting a whole list, lead-in and items in order, chosen and scored on its
    lead-in: None when the lead-in would not be quoted on its own (an item that matches the
    question does not bring its list in: s.375's seven descriptions for one description's
    "husband"), or when a sentence of it starts in lower case (the rest of a sentence the
    chunker cut: s.73's scale, s.363A's "begging" means, which the validator cannot check as
    quotes of their own; ``_continues``)."""
    ordered = [unit for unit, _ in sorted(parts, key=lambda p: (p[0].sentence_index, p[0].piece))]
    lead = ordered[0]
    qualifying = [u for u, ok in parts if ok and u.sentence_index == lead.sentence_index]
    if not qualifying or any(
        unit.text[:1].islower() and (unit.piece or unit.sentence_index) for unit in ordered
    ):
        return None
    return replace(
        lead,
        text=" ".join(unit.text for unit in ordered),
        stems=frozenset().union(*(unit.stems for unit in ordered)),
        score=max(unit.score for unit in qualifying),
        aspects=frozenset().union(*(unit.aspects for unit in ordered)),
        parts=tuple((unit.text, unit.semantic_id) for unit in ordered),
    )


class ExtractiveGenerator:
    """Query-focused sentence selection: key terms, intent cue, title, retrieval score; MMR.

    Every answer sentence is an evidence sentence quoted verbatim (its citation in place of its
    final full stop; ``cite_sentence``), so it passes the validator's overlap, number and
    negation checks. A statute list is quoted whole or not at all, and a named section's
    operative text comes first (``services/common/language/provisions.py``). In synthesis mode
    the quotes are grouped by document, each group under a heading line the validator exempts
    (``by_source``). With nothing relevant to quote it returns the refusal sentence.
    """

    def __init__(self, options: ExtractiveOptions | None = None) -> None:
        self._options = options or ExtractiveOptions()

    @property
    def name(self) -> str:
        """The generator's name in requests and results."""
        return "extractive"

    async def generate(self, request: GenerationRequest, *, timeout_s: float) -> GenerationResult:
        """Compose the answer (pure CPU, a few milliseconds; ``timeout_s`` is not needed)."""
        return GenerationResult(text=self.compose(request), generator=self.name, model=self.name)

    def compose(self, request: GenerationRequest) -> str:
        """The answer text for ``request``; deterministic for equal inputs."""
        key_terms = request.key_terms
        if key_terms is None:
            key_terms = extract_key_terms(request.question)
            if not (key_terms.effective or key_terms.sections) and request.focus_question:
                key_terms = extract_key_terms(request.focus_question)
        aspects = question_aspects(request.question, request.intent)
        units = self._units(request, aspects, key_terms)
        if not key_terms.sections:
            units = _answering(units, request.answer_scores, self._options.answering_floor)
        if not units:
            return REFUSAL
        seed = _one_per_compared_term(
            units, request.compared, request.evidence, choice_answer_type(request.question)
        )
        if self._options.operative_first and key_terms.sections:
            seed = _operative(units, request.evidence, seed)
        if self._options.part_answers_first and request.part_answers:
            seed = _part_answers(units, request.part_answers, seed)
        if request.synthesis_mode and self._options.synthesis_one_per_source:
            seed = self._one_per_source(units, request.evidence, seed)
        chosen = self._select(units, request.synthesis_mode, aspects, seed)
        chosen = self._complement(units, chosen, key_terms, request.answer_scores)
        if self._options.bridge_titles:
            chosen = self._bridges(units, chosen, request)
        if all(unit.lone for unit in chosen):
            # "..., namely:" and nothing after it: no answer ("Who is a public servant under
            # section 21?"; the corpus holds none of s.21's descriptions).
            return REFUSAL
        keep = self._options.keep_clause_marks
        if request.synthesis_mode:
            return by_source(chosen, request.evidence, keep_clause_marks=keep)
        return _plain(chosen, keep)

    def _one_per_source(
        self, units: list[_Unit], evidence: tuple[ScoredChunk, ...], seed: list[_Unit]
    ) -> list[_Unit]:
        """In synthesis mode, the best sentence of each document that gave 2+ passages (the
        documents the mode is about), when it scores at least ``complement_threshold`` of the
        best sentence's score."""
        counts: dict[str, int] = {}
        for scored in evidence:
            counts[scored.chunk.doc_id] = counts.get(scored.chunk.doc_id, 0) + 1
        floor = self._options.complement_threshold * max(unit.score for unit in units)
        chosen = list(seed)
        for doc_id in dict.fromkeys(scored.chunk.doc_id for scored in evidence):
            if counts[doc_id] < 2 or any(unit.doc_id == doc_id for unit in chosen):
                continue
            own = [unit for unit in units if unit.doc_id == doc_id and unit.score >= floor]
            if own:
                chosen.append(max(own, key=lambda u: (u.score, -u.position, -u.piece)))
        return chosen

    def _units(
        self, request: GenerationRequest, aspects: tuple[Intent, ...], key_terms: KeyTerms
    ) -> list[_Unit]:
        opts = self._options
        evidence = request.evidence
        # Sentences the model found answering the question (or one of its parts) may be quoted
        # even when they share no key term with it.
        parts = request.part_answers if opts.part_answers_first else ()
        answering = frozenset(request.answering).union(*parts)
        answers = request.answer_scores
        scores = [scored.score for scored in evidence]
        low, high = min(scores, default=0.0), max(scores, default=0.0)
        lists = _Lists.of(evidence) if opts.whole_lists else _Lists()
        seen_ids: set[str] = set()
        units: list[_Unit] = []
        # A list's sentences, each with whether it would be quoted on its own, by the list.
        members: dict[tuple[str, int], list[tuple[_Unit, bool]]] = {}
        for position, scored in enumerate(evidence):
            chunk = scored.chunk
            if chunk.semantic_id in seen_ids:
                continue
            seen_ids.add(chunk.semantic_id)
            if key_terms.sections and chunk_section(chunk) not in key_terms.sections:
                continue
            title = text_stems(chunk.title)
            context = title | chunk_stems(chunk) | {chunk_section(chunk)}
            title_signal = max(_title_signal(a, key_terms, title) for a in aspects)
            retrieval = 1.0 if high <= low else (scored.score - low) / (high - low)
            statute = bool(chunk.act and chunk.section)
            in_list = lists.member.get((chunk.doc_id, chunk.sentence_index))
            pieces = sentences(chunk.text)
            for piece, text in enumerate(pieces):
                # A lead-in whose items the evidence lacks is quoted only beside another quote.
                lone = (
                    piece == len(pieces) - 1 and (chunk.doc_id, chunk.sentence_index) in lists.lone
                )
                stems = text_stems(text)
                coverage = _coverage(key_terms, stems | context)
                qualifies = (
                    len(stems - STOP_WORDS) >= opts.min_content_words
                    and not _continues(text, piece, chunk)
                    and (coverage > 0.0 or chunk.semantic_id in answering)
                )
                if in_list is None and not qualifies:
                    # Fragments ("In this section,-"), a chunk's cut-off rest, and sentences
                    # holding no key term are never quoted alone.
                    continue
                carried = frozenset(
                    a
                    for a in aspects
                    if a is not Intent.GENERAL and has_intent_language(a, text, key_terms)
                )
                cue = 1.0 if carried else 0.0
                words = len(text.split())
                overflow = max(0, words - opts.long_sentence_words) / opts.long_sentence_words
                score = (
                    opts.weight_terms * coverage
                    + opts.weight_intent * cue
                    + opts.weight_title * title_signal
                    + opts.weight_retrieval * retrieval
                    + opts.weight_answerability * answers.get(chunk.semantic_id, 0.0)
                    - opts.max_length_penalty * min(1.0, overflow)
                )
                if in_list is None and text.rstrip().endswith(":"):
                    score *= 0.8  # a list introduction reads as an unfinished sentence
                unit = _Unit(
                    position=position,
                    piece=piece,
                    sentence_index=chunk.sentence_index,
                    text=text,
                    semantic_id=chunk.semantic_id,
                    doc_id=chunk.doc_id,
                    stems=stems,
                    score=score,
                    # A proviso limits a definition and is none (rule BH): "Provided that no
                    # agreement ... shall amount to a criminal conspiracy unless ..." is not
                    # picked as the answer to "What is criminal conspiracy?" (its score, cue
                    # included, is unchanged: it is still quoted beside the definition).
                    aspects=carried - {Intent.DEFINITION} if opens_proviso(text) else carried,
                    title=title,
                    statute=statute,
                    section=chunk_section(chunk),
                    lone=lone,
                )
                if in_list is not None:
                    members.setdefault(in_list, []).append((unit, qualifies))
                else:
                    units.append(unit)
        units.extend(
            block for parts in members.values() if (block := _list_unit(parts)) is not None
        )
        return units

    def _select(
        self,
        units: list[_Unit],
        synthesis_mode: bool,
        aspects: tuple[Intent, ...],
        seed: list[_Unit],
    ) -> list[_Unit]:
        opts = self._options
        limit = opts.synthesis_max_sentences if synthesis_mode else opts.max_sentences
        limit = max(limit, len(seed))
        share = opts.synthesis_relative_threshold if synthesis_mode else opts.relative_threshold
        top = max(unit.score for unit in units)
        ranked = sorted(units, key=lambda u: (-u.score, u.position, u.piece))
        chosen: list[_Unit] = list(seed)
        if len(aspects) > 1:
            # A compound question gets the best sentence for each part it asks about, even when
            # one part (the definition) scores below the other (the penalty) overall.
            for aspect in aspects:
                pick = next((u for u in ranked if aspect in u.aspects and u not in chosen), None)
                if pick is not None and len(chosen) < limit:
                    chosen.append(pick)
        remaining = [u for u in ranked if u.score >= share * top and u not in chosen]
        while remaining and len(chosen) < limit:
            best_value = float("-inf")
            best: _Unit | None = None
            for unit in remaining:
                similarity = max((_jaccard(unit.stems, c.stems) for c in chosen), default=0.0)
                value = opts.mmr_lambda * unit.score - (1 - opts.mmr_lambda) * similarity
                if synthesis_mode and any(c.doc_id == unit.doc_id for c in chosen):
                    value -= opts.repeat_document_penalty
                if value > best_value:
                    best_value, best = value, unit
            if best is None:
                break
            remaining.remove(best)
            if any(_jaccard(best.stems, c.stems) >= opts.duplicate_similarity for c in chosen):
                continue
            chosen.append(best)
        return chosen

    def _complement(
        self,
        units: list[_Unit],
        chosen: list[_Unit],
        key_terms: KeyTerms,
        answer_scores: Mapping[str, float],
    ) -> list[_Unit]:
        """Add one sentence from a second document when the chosen sentences all come from one:
        the best of another document the answerability model finds answering
        (``complement_answering_at``), else one that covers question terms they lack (for an
        answer of statute sections, from a section the question names by title:
        ``complement_by_title``)."""
        docs = {unit.doc_id for unit in chosen}
        if len(docs) != 1:
            return chosen
        others = [u for u in units if u.doc_id not in docs]
        bar = self._options.complement_answering_at
        if bar is not None and answer_scores:
            answering = [unit for unit in others if answer_scores.get(unit.semantic_id, 0.0) >= bar]
            if answering:
                best = max(
                    answering,
                    key=lambda u: (answer_scores[u.semantic_id], u.score, -u.position, -u.piece),
                )
                return [*chosen, best]
        if not key_terms.effective:
            return chosen
        covered = frozenset().union(*(unit.stems for unit in chosen))
        missing = {term for term in key_terms.effective if term not in covered}
        if not missing:
            return chosen
        floor = self._options.complement_threshold * max(unit.score for unit in units)
        candidates = [unit for unit in others if unit.score >= floor and missing & unit.stems]
        if self._options.complement_by_title and all(unit.statute for unit in chosen):
            # A section is added for what it is about (its title), not for a word it uses.
            asked = frozenset(key_terms.effective)
            candidates = [u for u in candidates if not u.statute or _titled_in(u.title, asked)]
        if not candidates:
            return chosen
        best = max(candidates, key=lambda u: (len(missing & u.stems), u.score, -u.position))
        return [*chosen, best]

    def _bridges(
        self, units: list[_Unit], chosen: list[_Unit], request: GenerationRequest
    ) -> list[_Unit]:
        """Quote each evidence document a chosen sentence names by title and the question does
        not (``bridge_titles``): its best-scoring sentence, else its first in evidence order. A
        document titled like a quoted one (a paragraph of the same article) is no bridge."""
        quoted = " ".join(unit.text for unit in chosen)
        docs = {unit.doc_id for unit in chosen}
        titles = {s.chunk.title for s in request.evidence if s.chunk.doc_id in docs}
        added: list[_Unit] = []
        for position, scored in enumerate(request.evidence):
            chunk = scored.chunk
            if len(added) >= self._options.bridge_max:
                break
            if chunk.doc_id in docs or not names_beyond_question(
                quoted, chunk.title, request.question, own_titles=titles
            ):
                continue
            docs.add(chunk.doc_id)
            own = [unit for unit in units if unit.doc_id == chunk.doc_id]
            if own:
                added.append(max(own, key=lambda u: (u.score, -u.position, -u.piece)))
                continue
            text = next(iter(sentences(chunk.text)), "")
            if text and not _continues(text, 0, chunk):
                added.append(
                    _Unit(
                        position=position,
                        piece=0,
                        sentence_index=chunk.sentence_index,
                        text=text,
                        semantic_id=chunk.semantic_id,
                        doc_id=chunk.doc_id,
                        stems=text_stems(text),
                        score=0.0,
                        title=text_stems(chunk.title),
                    )
                )
        return [*chosen, *added]


def _operative(
    units: list[_Unit], evidence: tuple[ScoredChunk, ...], seed: list[_Unit]
) -> list[_Unit]:
    """``seed``, then the units quoting a named section's operative text
    (``operative_first``; ``provisions.operative_positions`` over the evidence's passages of the
    section), in evidence and document order. ``units`` are the named sections' only."""
    texts: dict[str, dict[int, str]] = {}
    for scored in evidence:
        chunk = scored.chunk
        if chunk.act and chunk.section:
            texts.setdefault(chunk.doc_id, {})[chunk.sentence_index] = chunk.text
    operative = {doc_id: operative_positions(own) for doc_id, own in texts.items()}
    first = {doc_id: i for i, doc_id in reversed(list(enumerate(s.chunk.doc_id for s in evidence)))}
    found = [
        unit
        for unit in units
        if unit.statute and unit.sentence_index in operative.get(unit.doc_id, range(0))
    ]
    found.sort(key=lambda u: (first[u.doc_id], u.sentence_index, u.piece))
    return [*seed, *(unit for unit in found if unit not in seed)]


def _answering(
    units: list[_Unit], answer_scores: Mapping[str, float], floor: float | None
) -> list[_Unit]:
    """``units`` less those whose chunk the answerability model scores below ``floor``, when
    some unit's chunk reaches it; all of them when it is off, the model did not score the
    request, or none reaches it ("Then V", docs/EVALUATION.md)."""
    if floor is None or not answer_scores:
        return units
    kept = [unit for unit in units if answer_scores.get(unit.semantic_id, 0.0) >= floor]
    return kept or units


# P(answers) saturates near 1: for "How is robbery punished?" s.392 scores 0.9941, s.393 (the
# attempt) 0.9967, s.394 (hurt in robbery) 0.9966. Scores this close are not a ranking.
PART_ANSWER_TIE = 0.01


def _part_answers(
    units: list[_Unit], part_answers: tuple[Mapping[str, float], ...], seed: list[_Unit]
) -> list[_Unit]:
    """``seed`` and, for each part of a multi-part question in order, the sentence that answers
    it: among the sentences answering the part (``part_answers``: the model's P(answers) for
    that part, already at least its threshold) that score it at least as high as any other part
    (the part is their own), the best; when none has it as its own, the best answering it that
    is not chosen yet. A part nothing answers adds nothing ("Then T", docs/EVALUATION.md).
    Scores within ``PART_ANSWER_TIE`` of the best are tied, and the sentence's own score (key
    terms, intent language, title, retrieval rank and the model's score together) breaks the
    tie (rule AJ)."""
    chosen = list(seed)
    for answers in part_answers:
        answering = [unit for unit in units if unit.semantic_id in answers]
        own = [
            unit
            for unit in answering
            if all(
                answers[unit.semantic_id] >= other.get(unit.semantic_id, 0.0)
                for other in part_answers
            )
        ]
        pool = own or [unit for unit in answering if unit not in chosen]
        if not pool:
            continue
        # The model's near-ties are no ranking (rule AJ): the sentence's own score decides.
        top = max(answers[unit.semantic_id] for unit in pool)
        tied = [unit for unit in pool if answers[unit.semantic_id] >= top - PART_ANSWER_TIE]
        best = max(tied, key=lambda u: (u.score, answers[u.semantic_id], -u.position, -u.piece))
        if best not in chosen:
            chosen.append(best)
    return chosen


def _one_per_compared_term(
    units: list[_Unit],
    compared: tuple[str, ...],
    evidence: tuple[ScoredChunk, ...],
    weighs: str | None = None,
) -> list[_Unit]:
    """For a comparison, the best sentence about each compared term, in the question's order.

    A sentence is about a term when the term's content words are all in it or in its section
    title. One from a section titled with the term ("Assault", "Punishment for theft") comes
    first; then one about this term alone over one that also names the other terms (s.390
    names theft and extortion but defines neither); then, when the comparison weighs a kind of
    fact (``weighs``: "time" for "Which is older, X or Y?", ``comparison.choice_answer_type``),
    one that states such a fact (rule AO); then one in the asked aspect's language; then the
    score. For a term that names a section ("section 302"), whose words its text never
    holds, it is that section's first operative sentence the evidence holds (``_operative``),
    else the section's best-scoring one.
    """
    wanted = [term_stems(term) for term in compared]
    named = [term_sections(term) for term in compared]
    operative = _operative(units, evidence, []) if any(named) else []
    chosen: list[_Unit] = []
    for index, stems in enumerate(wanted):
        if named[index]:
            own = [u for u in units if u not in chosen and u.section in named[index]]
            first = next((u for u in operative if u in own), None)
            if first is None and own:
                first = max(own, key=lambda u: (u.score, -u.position, -u.piece))
            if first is not None:
                chosen.append(first)
            continue
        if not stems:
            continue
        # What the other terms add to this one: "grievous hurt" adds "grievous" to "hurt".
        extra = [w - stems for i, w in enumerate(wanted) if i != index and w - stems]
        about = [u for u in units if u not in chosen and stems <= (u.stems | u.title)]
        if about:
            chosen.append(max(about, key=lambda u: _comparison_rank(u, stems, extra, weighs)))
    return chosen


def _comparison_rank(
    unit: _Unit, term: frozenset[str], extra: list[frozenset[str]], weighs: str | None = None
) -> tuple[bool, bool, bool, bool, float]:
    mentions_other = any(words <= (unit.stems | unit.title) for words in extra)
    titled = titled_with(unit.title, term)
    states = weighs is None or states_answer_type(weighs, unit.text)
    return (titled, not mentions_other, states, bool(unit.aspects), unit.score)


# Title words that say a provision answers the intent, as stems of the one stemmer. "Meaning"
# and "Procedure" titles are not cues: the stems once written here by hand never matched them
# (that stemmer cut them to "mean" and "procedur"), and adding them is a change to measure alone.
_TITLE_CUES: dict[Intent, frozenset[str]] = {
    intent: frozenset(stem(word) for word in words.split())
    for intent, words in {
        Intent.PUNISHMENT: "punishment penalty",
        Intent.DEFINITION: "definition",
        Intent.SCOPE: "extent application jurisdiction operation",
        Intent.PROCEDURE: "manner application",
    }.items()
}


_ANY_TITLE_CUE = frozenset().union(*_TITLE_CUES.values())


def _titled_in(title: frozenset[str], asked: frozenset[str]) -> bool:
    """The question names a section by its title: the title's content words, less the intent
    cue words ("Punishment for ..."), are all among the ``asked`` terms."""
    subject = title - STOP_WORDS - _ANY_TITLE_CUE
    return bool(subject) and subject <= asked


def _title_signal(intent: Intent, key_terms: KeyTerms, title: frozenset[str]) -> float:
    """How well a section title says "this provision answers the question" (0..1).

    Statute titles are strong signals: "Punishment for theft", "Definition of criminal
    conspiracy", and a title that is just the defined term ("Theft", "Public servant").
    """
    if not title:
        return 0.0
    coverage = _coverage(key_terms, title)
    if intent is Intent.GENERAL:
        return coverage
    cue = bool(title & _TITLE_CUES.get(intent, frozenset()))
    if intent is Intent.DEFINITION and key_terms.terms and title <= set(key_terms.terms):
        cue = True
    return (coverage + 1.0) / 2 if cue else coverage / 2


def _coverage(key_terms: KeyTerms, stems: frozenset[str]) -> float:
    wanted = key_terms.effective
    if not wanted:
        # Only a section was named and the chunk is from it (checked by the caller).
        return 1.0 if key_terms.sections else 0.0
    return sum(1 for term in wanted if term in stems) / len(wanted)


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def _reading_order(chosen: list[_Unit]) -> list[_Unit]:
    """Best sentence first; sentences of one document stay together, in document order."""
    first_rank: dict[str, int] = {}
    for rank, unit in enumerate(chosen):
        first_rank.setdefault(unit.doc_id, rank)
    return sorted(chosen, key=lambda u: (first_rank[u.doc_id], u.sentence_index, u.piece))


def _continues(text: str, piece: int, chunk: Chunk) -> bool:
    """True for a sentence that starts in lower case after another of its document: the rest
    of a sentence the chunker cut (IPC_116_1, "or with such fine as is provided for that
    offence, or with both", ends s.116's one sentence; IPC_73_1-3 are the items of s.73's).

    The generator never quotes one. After any other quote the one sentence splitter runs it
    into that quote's sentence, in the answer as in the evidence ("... liable to fine
    [IPC_115_0]. or with such fine ..., or with both [IPC_116_1]." is one sentence, and the
    validator rightly finds that s.115 does not allow "or both"), and even after the sentence
    it continues the validator reads each cited passage's penalty on its own (s.116 whole,
    quoted across its two passages, fails as "the cited penalty has no fine"): it cannot tell
    two passages that continue each other from two that do not."""
    return text[:1].islower() and (piece > 0 or chunk.sentence_index > 0)


def _plain(chosen: list[_Unit], keep_clause_marks: bool) -> str:
    """The answer as one paragraph in reading order. A quote that opens its document in lower
    case ("iPhone ...") opens the answer or is left out: after another quote it would run into
    that one's sentence (``_continues``)."""
    ordered = _reading_order(chosen)
    kept = ordered[:1] + [unit for unit in ordered[1:] if not unit.text[:1].islower()]
    return join_quotes(_quotes(kept, keep_clause_marks))


def by_source(
    chosen: list[_Unit], evidence: tuple[ScoredChunk, ...], *, keep_clause_marks: bool = False
) -> str:
    """A synthesis-mode answer: one group per document, in evidence order, each opened by a
    heading line that names the source and how its passages relate to an earlier group's.

        IPC section 379:
        Whoever commits theft shall be punished ... three years ... [IPC_379_0].
        IPC section 380 (differs from IPC section 379 on a number):
        Whoever commits theft in any building ... seven years ... [IPC_380_0].

    A heading is a list introduction (it ends with a colon and is never last), which the
    validator exempts as a meta statement unless it states a penalty (``source_label`` says
    why a statute's heading never does); every quoted sentence keeps its citation. With one
    document, or a group whose first quote would continue its heading's line (a document that
    opens in lower case: "iPhone ..."), the answer is the plain one.
    """
    chunks = {scored.chunk.semantic_id: scored.chunk for scored in evidence}
    order = {doc_id: i for i, doc_id in enumerate(dict.fromkeys(c.doc_id for c in chunks.values()))}
    groups: dict[str, list[_Unit]] = {}
    for unit in sorted(chosen, key=lambda u: (order[u.doc_id], u.sentence_index, u.piece)):
        groups.setdefault(unit.doc_id, []).append(unit)
    if len(groups) < 2 or any(units[0].text[:1].islower() for units in groups.values()):
        return _plain(chosen, keep_clause_marks)
    cited = [chunks[i] for units in groups.values() for unit in units for _, i in unit.quoted]
    relations = relate(cited)
    lines: list[str] = []
    for units in groups.values():
        own = {semantic_id for unit in units for _, semantic_id in unit.quoted}
        notes = dict.fromkeys(
            _note(relation, chunks[relation.first_id])
            for relation in relations
            if relation.second_id in own and relation.first_id not in own
        )
        heading = source_label(chunks[units[0].semantic_id])
        lines.append(source_heading(heading, list(notes)))
        lines.append(join_quotes(_quotes(units, keep_clause_marks)))
    return "\n".join(lines)


def source_label(chunk: Chunk) -> str:
    """How a heading names a document: "IPC section 379" for a statute, else its title (or id).

    A statute is named by its act and section, not its title: the heading cites nothing, and
    the validator exempts an uncited lead-in only while it states no penalty, which a title can
    ("Theft after preparation made for causing death ..."; the validator reads titles, and a
    heading that is a title word for word names a source, but a penalty it states is still
    checked first: docs/VALIDATOR.md, rule 7). "IPC section 382,
    Theft after preparation made for causing death, hurt or restraint ..." read as a claim
    that death is the penalty, and the answer was refused (NO_CITATION), as were 31 other IPC
    titles ("Amount of fine", "Causing death by negligence"). A section reference states
    nothing; the title is in the response's citations.
    """
    if chunk.act and chunk.section:
        label = f"{chunk.act} section {chunk.section}"
    else:
        label = chunk.title or chunk.doc_id
    label = " ".join(_HEADING_BREAKS.sub(" ", label).split()).strip(" ,")
    return label[:1].upper() + label[1:]


_NOTES = {
    RelationKind.AGREEMENT: SOURCE_NOTES["agreement"],
    RelationKind.NUMERIC: SOURCE_NOTES["numeric"],
    RelationKind.NEGATION: SOURCE_NOTES["negation"],
}


def _note(relation: SourceRelation, earlier: Chunk) -> str:
    return _NOTES[relation.kind].format(source_label(earlier))


def _quotes(units: list[_Unit], keep_clause_marks: bool) -> list[str]:
    return [
        cite_sentence(text, semantic_id, keep_clause_marks=keep_clause_marks)
        for unit in units
        for text, semantic_id in unit.quoted
    ]


def cite_sentence(sentence: str, semantic_id: str, *, keep_clause_marks: bool = False) -> str:
    """How the generator writes a quoted sentence: its text, the citation, one full stop; or,
    with ``keep_clause_marks``, a sentence that ends with ':' or ';' keeps it before the
    citation and gets no full stop ("..., namely: [IPC_21_0]"), so a reader sees the text goes
    on (a full stop there hid it)."""
    trailing = _TRAILING.search(sentence)
    body = sentence[: trailing.start()] if trailing else sentence
    mark = trailing.group() if trailing else ""
    if keep_clause_marks and (":" in mark or ";" in mark):
        return f"{body}{':' if ':' in mark else ';'} [{semantic_id}]"
    return f"{body} [{semantic_id}]."


def join_quotes(quotes: list[str]) -> str:
    """Quotes written by ``cite_sentence`` as one text: after a quote that kept its ':' or ';'
    the next starts a line, which ends a sentence for the one splitter (a space would run the
    two into one sentence of two citations)."""
    text = ""
    for quote in quotes:
        if text:
            text += " " if text.endswith(".") else "\n"
        text += quote
    return text
