"""What a citation is: the one grammar of bracketed citations, for the validator that checks them
and for synthesis, which resolves positional ones before validation.

Accepted forms: ``[semantic_id]``, ``[A][B]``, ``[A, B]`` / ``[A; B]``, and numbered evidence
``[1]``, ``[1-3]``, ``[1,2]`` (1-based positions in the request's evidence list). An all-digit
token (or digit range) that is exactly an evidence id is that id; otherwise it is a position.
A cited id is compared with the evidence ids as written, then in NFC (an id typed with a
decomposed accent names the same passage). Brackets and positions are ASCII: a citation written
with look-alike brackets (``［1］``, ``【1】``) or another script's digits (``[１]``, ``[١]``,
``[१]``) is malformed, its problem naming the character, never read as text.
docs/VALIDATOR.md gives the full rules, including which bracketed text is not a citation.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final, Protocol


class EvidenceLike(Protocol):
    """What the validator needs of an evidence item (``services.common.evidence.Chunk`` fits)."""

    @property
    def semantic_id(self) -> str: ...

    @property
    def text(self) -> str: ...


# The longest evidence title an uncited heading may name (rule K; docs/VALIDATOR.md).
MAX_TITLE_CHARS: Final = 1024


@dataclass(frozen=True, slots=True)
class EvidenceIndex:
    """Evidence ids in request order, with a lookup from id to its first position."""

    ids: tuple[str, ...]
    texts: tuple[str, ...]
    position: Mapping[str, int]
    max_id_length: int
    # The kinds (``_word_kind``) of the ids that are plain words ("A", "alpha"): a bracketed
    # word of one of these kinds is a citation attempt here, not editorial text.
    word_kinds: frozenset[str] = frozenset()
    # The ids not in NFC, by their NFC form (the first of a form): with the ids themselves,
    # what a citation that matches no id as written is compared with once in NFC.
    by_nfc: Mapping[str, str] = field(default_factory=dict)
    # Each item's title, where the caller gave one (``Passage.title``; "" otherwise): what an
    # uncited heading or lead-in may name.
    titles: tuple[str, ...] = ()

    def lookup(self, written: str) -> str | None:
        """The evidence id ``written`` names, compared as written, then in NFC ("café_1" typed
        with a combining accent names the passage "café_1"); None when it names none."""
        if written in self.position:
            return written
        form = unicodedata.normalize("NFC", written)
        return form if form in self.position else self.by_nfc.get(form)

    @classmethod
    def build(cls, evidence: Sequence[EvidenceLike]) -> EvidenceIndex:
        """Index ``evidence``; a repeated id keeps its first position and text."""
        index = cls.of([item.semantic_id for item in evidence], [item.text for item in evidence])
        # A title longer than MAX_TITLE_CHARS names nothing (no corpus title comes near it, and
        # reading a megabyte "title" for every framing sentence would cost seconds).
        titles = tuple(
            title if len(title) <= MAX_TITLE_CHARS else ""
            for title in (str(getattr(item, "title", "") or "") for item in evidence)
        )
        return replace(index, titles=titles) if any(titles) else index

    @classmethod
    def of(cls, ids: Sequence[str], texts: Sequence[str] = ()) -> EvidenceIndex:
        """Index ids (and their texts, when known: they tell quoted brackets from citations)."""
        position: dict[str, int] = {}
        for i, semantic_id in enumerate(ids):
            position.setdefault(semantic_id, i)
        return cls(
            ids=tuple(ids),
            texts=tuple(texts),
            position=position,
            max_id_length=max((len(i) for i in ids), default=0),
            word_kinds=frozenset(
                _word_kind(i)
                for i in position
                if _ID_SHAPED_RE.fullmatch(i) and not _looks_like_id(i)
            ),
            by_nfc=_by_nfc(position),
        )


@dataclass(frozen=True, slots=True)
class Citation:
    """One bracketed citation token in an answer and what it resolved to.

    ``ids`` are resolved semantic ids in the order written; ``invalid`` are parts that name no
    evidence item (an unknown id, or a position/range outside the evidence, as written);
    ``problem`` is non-empty when the token is malformed.
    """

    start: int
    end: int
    raw: str
    ids: tuple[str, ...] = ()
    invalid: tuple[str, ...] = ()
    problem: str = ""
    # True when some part named evidence by position ("[2]", "[1-3]") rather than by id.
    positional: bool = False


_PAIR_RE = re.compile(r"\[([^\[\]\n]*)\]")
_LINK_TARGET_RE = re.compile(r"\([^\s()]+\)")
_DIGITS_RE = re.compile(r"[0-9]+")
_NUMBER_RE = re.compile(r"[0-9]+(?:[.,][0-9]+)*")
# A percentage or a decimal ("12%", "0.61") is a measurement, never an evidence position.
_MEASURE_RE = re.compile(r"[0-9]+(?:[.,·][0-9]+)*\s*%|[0-9]*[.·][0-9]+")
_RANGE_RE = re.compile(r"([0-9]+)\s*[-‐–—]\s*([0-9]+)")
_ID_SHAPED_RE = re.compile(r"\S+")
_ID_SUFFIX_RE = re.compile(r".*_[0-9]+")
_HAS_ID_CHAR_RE = re.compile(r"[0-9_]")
_SEPARATOR_RE = re.compile(r"([,;])")
# A pair of the look-alike brackets people and models write for citations: full-width (CJK
# input) and lenticular. Read in ASCII they would be a citation; written so, they are malformed.
_LOOKALIKE_PAIR_RE = re.compile(r"[［【]([^\[\]［］【】\n]*)[］】]")
_FULL_WIDTH_FIRST, _FULL_WIDTH_LAST, _FULL_WIDTH_SHIFT = "\uff01", "\uff5e", 0xFEE0
_ELLIPSES = frozenset({"...", "…", ". . ."})
_MAX_CITATION_WORDS = 3


def _by_nfc(ids: Iterable[str]) -> dict[str, str]:
    """The ids that are not in NFC, by their NFC form; the first of a form wins."""
    found: dict[str, str] = {}
    for semantic_id in ids:
        form = unicodedata.normalize("NFC", semantic_id)
        if form != semantic_id:
            found.setdefault(form, semantic_id)
    return found


def uncitable(semantic_id: str) -> str:
    """Why no citation can name ``semantic_id`` under this grammar ("" when one can): a citation
    is the text between '[' and ']' on one line, trimmed, so an id holding a bracket, a line
    break or another control character, or with spaces at either end, can never be cited."""
    if "[" in semantic_id or "]" in semantic_id:
        return "must not contain '[' or ']' (a citation could never name it)"
    if not semantic_id.isprintable():  # control characters, line breaks, zero-width marks
        return "must not contain control or invisible characters (a citation could never name it)"
    if semantic_id != semantic_id.strip():
        return "must not start or end with a space (a citation could never name it)"
    return ""


def scan(answer: str, index: EvidenceIndex) -> list[Citation]:
    """Every citation token in ``answer`` (valid, invalid or malformed), in order.

    Bracketed text that is clearly not a citation attempt (``[Repealed]``, ``[sic]``, a
    Markdown link text, a bracket or stray bracket quoted verbatim from the evidence) is left as
    ordinary text.
    """
    citations: list[Citation] = []
    paired: list[tuple[int, int]] = []
    for match in _PAIR_RE.finditer(answer):
        paired.append(match.span())
        if _LINK_TARGET_RE.match(answer, match.end()):
            continue
        citation = _classify(match.group(0), match.group(1), match.start(), index)
        if citation is not None:
            citations.append(citation)
    if "［" in answer or "【" in answer:
        citations.extend(_lookalikes(answer, paired, index))
    citations.extend(
        c
        for c in _unmatched(answer, paired)
        if not any(c.raw in t for t in index.texts)
        and not (_DIGITS_RE.search(c.raw) and _quoted_with_other_digits(c.raw, index))
    )
    citations.sort(key=lambda c: c.start)
    return citations


def resolve_citations(answer: str, evidence: Sequence[EvidenceLike]) -> list[str]:
    """Semantic ids cited by ``answer``, first-appearance order, each once; compact numbered
    citations (``[1-3]``) come back as the ids they name. Unresolvable parts are left out."""
    index = EvidenceIndex.build(evidence)
    seen: dict[str, None] = {}
    for citation in scan(answer, index):
        for semantic_id in citation.ids:
            seen.setdefault(semantic_id, None)
    return list(seen)


def _classify(raw: str, content: str, start: int, index: EvidenceIndex) -> Citation | None:
    end = start + len(raw)
    whole = content.strip()
    if (named := index.lookup(whole)) is not None:
        return Citation(start, end, raw, ids=(named,))
    if not whole.strip(",; \t"):
        return Citation(start, end, raw, problem="empty citation")
    if whole in _ELLIPSES:
        return None
    ids: list[str] = []
    invalid: list[str] = []
    problems: list[str] = []
    prose: list[str] = []
    positional = False
    for part in _parts(content, index):
        if not part:
            problems.append("empty citation part")
        elif (named := index.lookup(part)) is not None:
            ids.append(named)
        elif problem := _not_ascii(part):
            problems.append(problem)
        elif _DIGITS_RE.fullmatch(part):
            number = int(part)
            if 1 <= number <= len(index.ids):
                ids.append(index.ids[number - 1])
                positional = True
            else:
                invalid.append(part)
        elif match := _RANGE_RE.fullmatch(part):
            first, last = int(match.group(1)), int(match.group(2))
            if first > last:
                problems.append(f"descending range '{part}'")
            elif first < 1 or last > len(index.ids):
                invalid.append(part)
            else:
                ids.extend(index.ids[first - 1 : last])
                positional = True
        elif _looks_like_id(part) or (
            _ID_SHAPED_RE.fullmatch(part) and _word_kind(part) in index.word_kinds
        ):
            invalid.append(part)
        elif _HAS_ID_CHAR_RE.search(part) and len(part.split()) <= _MAX_CITATION_WORDS:
            problems.append(f"'{part}' is not an evidence id (ids contain no spaces)")
        else:
            prose.append(part)
    if not (ids or invalid or problems):
        return None  # editorial bracket such as [Repealed] or [emphasis added]
    if (invalid or problems) and any(raw in text for text in index.texts):
        return None  # a bracket quoted verbatim from the evidence, e.g. "[95% CI]"
    if (
        not ids
        and (" " in whole or _MEASURE_RE.fullmatch(whole))
        and _quoted_with_other_digits(raw, index)
    ):
        # "[95% CI, 0.61-0.71]" or "[12%]" where the evidence has "[95% CI, 0.62-0.71]" or
        # "[9%]": quoted text whose numbers changed; as text its numbers face the number check
        # (NUMBER_MISMATCH). A bare "[12]" stays a position: it may be a citation out of range.
        return None
    problems.extend(f"'{p}' is not a citation" for p in prose)
    return Citation(start, end, raw, tuple(ids), tuple(invalid), "; ".join(problems), positional)


def _ascii_form(text: str) -> str:
    """``text`` with full-width ASCII (``［１］``) and every script's decimal digits (``١``,
    ``१``) written as ASCII, one code point for one: offsets into it are offsets into ``text``."""
    if text.isascii():
        return text
    return "".join(
        chr(ord(c) - _FULL_WIDTH_SHIFT)
        if _FULL_WIDTH_FIRST <= c <= _FULL_WIDTH_LAST
        else str(unicodedata.decimal(c))
        if c.isdecimal()
        else c
        for c in text
    )


def _misspelt(text: str, ascii_form: str) -> str:
    """Why ``text`` cannot be a citation although ``ascii_form`` could: the characters named."""
    changed = dict.fromkeys(c for c, a in zip(text, ascii_form, strict=True) if c != a)
    named = ", ".join(f"'{c}' (U+{ord(c):04X} {unicodedata.name(c, '')})" for c in changed)
    return f"written with {named}: a citation is written in ASCII brackets and digits, as {ascii_form!r}"


def _not_ascii(part: str) -> str:
    """Why a bracketed part is malformed ("" when it is not) because it is written with another
    script's digits or full-width characters where ASCII would make it a citation attempt
    (``[१]``, ``[１-３]``, ``[IPC_３７９_0]``, as ``[section 3]`` is one)."""
    ascii_form = _ascii_form(part)
    if ascii_form == part or not (
        _looks_like_id(ascii_form)
        or (_HAS_ID_CHAR_RE.search(ascii_form) and len(part.split()) <= _MAX_CITATION_WORDS)
    ):
        return ""
    return _misspelt(part, ascii_form)


def _lookalikes(
    answer: str, paired: Sequence[tuple[int, int]], index: EvidenceIndex
) -> list[Citation]:
    """Citations written with look-alike brackets (``［1］``, ``【IPC_379_0】``): malformed, the
    problem naming the characters, when the same text in ASCII would be a citation. A bracket
    quoted from the evidence, or one that would be editorial text, stays text."""
    found: list[Citation] = []
    for match in _LOOKALIKE_PAIR_RE.finditer(answer):
        raw = match.group(0)
        if any(a <= match.start() < b for a, b in paired) or any(raw in t for t in index.texts):
            continue
        ascii_raw = _ascii_form(raw.replace("【", "[").replace("】", "]"))
        if _classify(ascii_raw, ascii_raw[1:-1], match.start(), index) is not None:
            found.append(
                Citation(match.start(), match.end(), raw, problem=_misspelt(raw, ascii_raw))
            )
    return found


def resolve_positions(text: str, ids: Sequence[str], texts: Sequence[str] = ()) -> str:
    """Rewrite every citation that names evidence by position (``[2]``, ``[1-3]``, ``[1, 4]``)
    as adjacent id brackets (``[ID_a][ID_b]``), by the grammar ``scan`` reads.

    A bracket with an invalid or malformed part (out of range, descending, an unknown id) is
    left exactly as written, so that the validator reports it instead of the text being
    silently repaired; so is every bracket that names ids only, or is no citation at all.
    """
    out: list[str] = []
    last = 0
    for citation in scan(text, EvidenceIndex.of(ids, texts)):
        if not citation.positional or citation.invalid or citation.problem:
            continue
        out.append(text[last : citation.start])
        out.append("".join(f"[{i}]" for i in dict.fromkeys(citation.ids)))
        last = citation.end
    out.append(text[last:])
    return "".join(out)


def _quoted_with_other_digits(raw: str, index: EvidenceIndex) -> bool:
    """True when ``raw`` is a bracket of the evidence text with only digits changed."""
    shape = _NUMBER_RE.sub("0", raw)
    return any(
        ("[" in text or "]" in text) and shape in _NUMBER_RE.sub("0", text) for text in index.texts
    )


def _parts(content: str, index: EvidenceIndex) -> list[str]:
    """Split on ',' / ';' but keep together separated pieces that form an evidence id."""
    pieces = _SEPARATOR_RE.split(content)
    texts = pieces[0::2]
    parts: list[str] = []
    i = 0
    while i < len(texts):
        taken = 1
        joined = texts[i]
        for j in range(i + 1, len(texts)):
            joined += pieces[2 * j - 1] + texts[j]
            if len(joined.strip()) > index.max_id_length:
                break
            if joined.strip() in index.position:
                taken = j - i + 1
        parts.append("".join(pieces[2 * i : 2 * (i + taken) - 1]).strip())
        i += taken
    return parts


def _looks_like_id(part: str) -> bool:
    """An id-shaped token: one word with a digit or '_', an ALL-CAPS code, or '<name>_<n>'."""
    if _ID_SUFFIX_RE.fullmatch(part):
        return True
    if not _ID_SHAPED_RE.fullmatch(part):
        return False
    letters = [c for c in part if c.isalpha()]
    return bool(_HAS_ID_CHAR_RE.search(part)) or (
        len(letters) >= 2 and all(c.isupper() for c in letters)
    )


def _word_kind(word: str) -> str:
    """How a word is written: "upper" ("A", "B"), "lower" ("sic"), "title" ("Repealed"), else
    "mixed". Where the evidence ids are plain words, "[B]" beside an id "A" is a citation to an
    id the evidence lacks (INVALID_CITATION), while "[sic]" and "[Repealed]" stay text; an
    answer whose ids are words like "Alpha" cannot write "[Repealed]" as an editorial note."""
    if word.isupper():
        return "upper"
    if word.islower():
        return "lower"
    return "title" if word.istitle() else "mixed"


def _unmatched(answer: str, paired: Sequence[tuple[int, int]]) -> list[Citation]:
    """Stray '[' or ']' outside every bracket pair: always a malformed citation."""
    found: list[Citation] = []
    starts = iter(paired)
    current = next(starts, None)
    last_end = 0
    for match in re.finditer(r"[\[\]]", answer):
        position = match.start()
        while current is not None and current[1] <= position:
            last_end = max(last_end, current[1])
            current = next(starts, None)
        if current is not None and current[0] <= position < current[1]:
            continue
        if match.group() == "[":
            end = position + 1
            while end < len(answer) and not answer[end].isspace() and answer[end] not in "[]":
                end += 1
            while end > position + 1 and answer[end - 1] in ".,;:)":
                end -= 1
            problem = "unclosed '['"
            start = position
        else:
            start = position
            while start > last_end and not answer[start - 1].isspace() and answer[start - 1] != "]":
                start -= 1
            end = position + 1
            problem = "']' without '['"
        found.append(Citation(start, end, answer[start:end], problem=problem))
        last_end = max(last_end, end)
    return found
