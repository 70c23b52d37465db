"""The IPC golden set: record format, strict loader and cross-check against the statutes file."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluation.matching import normalize_ws
from services.common.errors import CorpusFormatError
from services.common.intent import Intent
from services.common.language.footnotes import without_footnote_markers

# ipc-NNN: the team's golden set; plain-NNN: the plain-language set (report-only, never tuned on).
_ID = re.compile(r"^(?:ipc|plain)-\d{3}$")
_DOC_ID = re.compile(r"^IPC_\d+[A-Z]*$")
_REQUIRED = {
    "id": str,
    "question": str,
    "answerable": bool,
    "intent": str,
    "gold_doc_ids": list,
    "key_sentences": list,
    "rationale": str,
}
_OPTIONAL = {"answer_contains": list, "absent_terms": list}


@dataclass(frozen=True, slots=True)
class GoldenItem:
    """One golden question.

    Answerable items name their gold sections (``IPC_<section>``) and the exact sentences an answer
    must rest on; ``answer_contains`` lists short strings every acceptable answer contains.
    Unanswerable items have no gold and list ``absent_terms``: words or phrases that an answer
    would need and that occur nowhere in the corpus, so their absence can be checked.
    """

    id: str
    question: str
    answerable: bool
    intent: Intent
    gold_doc_ids: tuple[str, ...]
    key_sentences: tuple[str, ...]
    answer_contains: tuple[str, ...]
    rationale: str
    absent_terms: tuple[str, ...]
    line: int


@dataclass(frozen=True, slots=True)
class IpcSection:
    """One IPC section as the corpus has it."""

    doc_id: str
    section: str
    title: str
    text: str
    chapter: int
    chapter_title: str


def ipc_doc_id(section: object) -> str:
    """Document id of an IPC section number (``420`` -> ``IPC_420``, ``"498A"`` -> ``IPC_498A``)."""
    return f"IPC_{section}"


def load_ipc_sections(path: Path) -> dict[str, IpcSection]:
    """Read ipc.json: ``{chapter, chapter_title, Section, section_title, section_desc}``."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise CorpusFormatError(f"{path}: cannot read IPC corpus: {exc}") from exc
    if not isinstance(raw, list):
        raise CorpusFormatError(f"{path}: expected a JSON list of sections")
    sections: dict[str, IpcSection] = {}
    for index, record in enumerate(raw):
        try:
            section = IpcSection(
                doc_id=ipc_doc_id(record["Section"]),
                section=str(record["Section"]),
                title=str(record["section_title"]),
                # As the statutes reader serves it: without the footnote markers.
                text=without_footnote_markers(str(record["section_desc"])),
                chapter=int(record["chapter"]),
                chapter_title=str(record["chapter_title"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise CorpusFormatError(f"{path}: record {index}: bad IPC section: {exc!r}") from exc
        if section.doc_id in sections:
            raise CorpusFormatError(f"{path}: record {index}: duplicate section {section.section}")
        sections[section.doc_id] = section
    return sections


def _fail(path: Path, line: int, problem: str) -> CorpusFormatError:
    return CorpusFormatError(
        f"{path}:{line}: {problem}", metadata={"path": str(path), "line": str(line)}
    )


def _strings(path: Path, line: int, key: str, value: list[Any]) -> tuple[str, ...]:
    if not all(isinstance(v, str) and v.strip() for v in value):
        raise _fail(path, line, f"'{key}' must be a list of non-empty strings")
    return tuple(value)


def _parse(path: Path, line: int, record: Any) -> GoldenItem:
    if not isinstance(record, dict):
        raise _fail(path, line, "expected a JSON object")
    missing = sorted(set(_REQUIRED) - set(record))
    if missing:
        raise _fail(path, line, f"missing field(s) {', '.join(missing)}")
    unknown = sorted(set(record) - set(_REQUIRED) - set(_OPTIONAL))
    if unknown:
        raise _fail(path, line, f"unknown field(s) {', '.join(unknown)}")
    for key, kind in {**_REQUIRED, **_OPTIONAL}.items():
        if key in record and not isinstance(record[key], kind):
            raise _fail(path, line, f"'{key}' must be a {kind.__name__}")
    if not _ID.match(record["id"]):
        raise _fail(path, line, f"id {record['id']!r} does not match ipc-NNN or plain-NNN")
    if not record["question"].strip() or not record["rationale"].strip():
        raise _fail(path, line, "'question' and 'rationale' must not be empty")
    try:
        intent = Intent(record["intent"])
    except ValueError:
        allowed = ", ".join(i.value for i in Intent)
        raise _fail(path, line, f"intent {record['intent']!r} is not one of {allowed}") from None
    doc_ids = _strings(path, line, "gold_doc_ids", record["gold_doc_ids"])
    bad_ids = [d for d in doc_ids if not _DOC_ID.match(d)]
    if bad_ids:
        raise _fail(path, line, f"gold doc id(s) {bad_ids} do not match IPC_<section>")
    # The gold text is read as the corpus is served: a footnote marker copied from the file
    # ("trafficking1") is no part of the gold (footnotes.py).
    key_sentences = tuple(
        without_footnote_markers(s)
        for s in _strings(path, line, "key_sentences", record["key_sentences"])
    )
    answer_contains = tuple(
        without_footnote_markers(s)
        for s in _strings(path, line, "answer_contains", record.get("answer_contains", []))
    )
    absent_terms = _strings(path, line, "absent_terms", record.get("absent_terms", []))
    if record["answerable"]:
        if not doc_ids or not key_sentences:
            raise _fail(path, line, "an answerable item needs gold_doc_ids and key_sentences")
        if absent_terms:
            raise _fail(path, line, "an answerable item must not list absent_terms")
    elif doc_ids or key_sentences or answer_contains:
        raise _fail(path, line, "an unanswerable item has no gold docs, sentences or answers")
    elif not absent_terms:
        raise _fail(path, line, "an unanswerable item needs absent_terms to prove the absence")
    return GoldenItem(
        id=record["id"],
        question=record["question"],
        answerable=record["answerable"],
        intent=intent,
        gold_doc_ids=doc_ids,
        key_sentences=key_sentences,
        answer_contains=answer_contains,
        rationale=record["rationale"],
        absent_terms=absent_terms,
        line=line,
    )


def load_golden(path: Path) -> list[GoldenItem]:
    """Load and schema-check a golden JSONL file; errors name the line (CorpusFormatError)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise CorpusFormatError(f"{path}: cannot read golden set: {exc}") from exc
    items: list[GoldenItem] = []
    seen: dict[str, int] = {}
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            record = json.loads(text)
        except json.JSONDecodeError as exc:
            raise _fail(path, number, f"invalid JSON: {exc.msg}") from exc
        item = _parse(path, number, record)
        if item.id in seen:
            raise _fail(path, number, f"duplicate id {item.id} (first on line {seen[item.id]})")
        seen[item.id] = number
        items.append(item)
    if not items:
        raise CorpusFormatError(f"{path}: golden set is empty")
    return items


def occurs_as_words(term: str, folded_text: str) -> bool:
    """True when ``term`` occurs in case-folded ``folded_text`` on word boundaries.

    Word boundaries keep "FIR" from matching inside "first".
    """
    needle = normalize_ws(term).casefold()
    start = folded_text.find(needle)
    while start >= 0:
        end = start + len(needle)
        before = folded_text[start - 1] if start > 0 else " "
        after = folded_text[end] if end < len(folded_text) else " "
        if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
            return True
        start = folded_text.find(needle, start + 1)
    return False


def find_key_sentence(item: GoldenItem, sentence: str, sections: Mapping[str, IpcSection]) -> str:
    """The gold doc whose text contains ``sentence`` (after whitespace normalisation), or ''."""
    needle = normalize_ws(sentence)
    for doc_id in item.gold_doc_ids:
        section = sections.get(doc_id)
        if section is not None and needle in normalize_ws(section.text):
            return doc_id
    return ""


def check_against_corpus(items: list[GoldenItem], sections: Mapping[str, IpcSection]) -> list[str]:
    """Every way the golden set disagrees with the corpus, one line each (empty when consistent).

    Checks: each gold doc exists and has text; each key sentence is an exact substring of one of
    its gold docs; each gold doc holds at least one key sentence; each ``answer_contains`` string
    occurs (case-insensitively) in the key sentences; each unanswerable item's ``absent_terms``
    occur in no section text or title.
    """
    problems: list[str] = []
    # One searchable string; the blank line keeps a phrase from spanning two sections.
    haystack = "\n\n".join(
        normalize_ws(f"{s.title} {s.text}") for s in sections.values()
    ).casefold()
    for item in items:
        where = f"{item.id} (line {item.line})"
        for doc_id in item.gold_doc_ids:
            section = sections.get(doc_id)
            if section is None:
                problems.append(f"{where}: gold doc {doc_id} is not in the corpus")
            elif not section.text.strip():
                problems.append(f"{where}: gold doc {doc_id} has no text")
        used: set[str] = set()
        for sentence in item.key_sentences:
            doc_id = find_key_sentence(item, sentence, sections)
            if doc_id:
                used.add(doc_id)
            else:
                problems.append(f"{where}: key sentence not found in its gold docs: {sentence!r}")
        for doc_id in item.gold_doc_ids:
            if doc_id in sections and doc_id not in used:
                problems.append(f"{where}: gold doc {doc_id} holds none of the key sentences")
        support = normalize_ws(" ".join(item.key_sentences)).casefold()
        for expected in item.answer_contains:
            if normalize_ws(expected).casefold() not in support:
                problems.append(f"{where}: answer string {expected!r} is not in the key sentences")
        for term in item.absent_terms:
            if occurs_as_words(term, haystack):
                problems.append(f"{where}: absent term {term!r} occurs in the corpus")
    return problems
