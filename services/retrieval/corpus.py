"""Corpus loaders: statutes JSON, generic JSONL, text/markdown directories and PDFs → Documents."""

from __future__ import annotations

import bisect
import dataclasses
import json
import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from pypdf import PdfReader
from pypdf.errors import PdfReadError

from services.common.errors import CorpusFormatError
from services.common.evidence import MAX_DOC_ID_CHARS
from services.common.language.acts import ACT_CODE, REGISTRY_PATH, Act
from services.common.language.acts import ACTS as REGISTERED_ACTS
from services.common.language.citations import uncitable
from services.common.language.footnotes import without_footnote_markers
from services.common.language.references import normalise_section

logger = logging.getLogger(__name__)

FORMATS: Final = ("statutes", "jsonl", "dir", "pdf")

# What the readers make of the same files; part of the index checksum (store.corpus_checksum),
# so an index built by an older reader is rebuilt. 2: IPC chapter titles restored (below).
# 3: footnote reference digits removed from statute text ("trafficking1", footnotes.py);
# 4: the same, re-landed after Then T (a cache built by 3, since reverted, may hold either).
READER_VERSION: Final = 4

# The IPC file's chapter titles lost their "of" and "to" upstream ("criminal breach  trust"):
# every one that did, as the file writes it -> the title as enacted (lower case, like the rest
# of the file). Provenance only (chapter titles are not searched or embedded); the file itself
# stays byte for byte as fetched (data/corpora/indian_law/SOURCE.md).
IPC_CHAPTER_TITLES: Final[Mapping[str, str]] = {
    "contempt's  the lawful authority  public servants": (
        "contempts of the lawful authority of public servants"
    ),
    "the causing  miscarriage,  injuries to unborn children,  the exposure  infants, and  "
    "the concealment  births": (
        "the causing of miscarriage, of injuries to unborn children, of the exposure of "
        "infants, and of the concealment of births"
    ),
    "offences against property  theft": "offences against property: theft",
    "criminal misappropriation  property": "criminal misappropriation of property",
    "criminal breach  trust": "criminal breach of trust",
    "the receiving  stolen property": "the receiving of stolen property",
    "fraudulent deeds and dispositions  property": "fraudulent deeds and dispositions of property",
    "the criminal breach  contracts  service": "the criminal breach of contracts of service",
    "cruelty by husband or relatives  husband": "cruelty by husband or relatives of husband",
    "attempts  commit offences": "attempts to commit offences",
}


@dataclass(frozen=True, slots=True)
class Document:
    """One retrievable unit of a corpus (a statute section or article, a file, a JSONL record).

    ``text`` is whitespace-normalised (see ``normalise_whitespace``); every offset anyone
    computes later (chunks, ``pages``) is an offset into this stored text.
    ``pages`` holds ``(page_number, char_start, char_end)`` spans when the source has pages.
    """

    doc_id: str
    title: str
    text: str
    act: str = ""
    act_name: str = ""
    section: str = ""
    chapter: str = ""
    chapter_title: str = ""
    url: str = ""
    pages: tuple[tuple[int, int, int], ...] = ()
    metadata: dict[str, str] = field(default_factory=dict)

    def page_at(self, offset: int) -> int:
        """Page number holding character ``offset`` of ``text``; 0 when the source has no pages."""
        if not self.pages:
            return 0
        starts = [start for _, start, _ in self.pages]
        i = max(bisect.bisect_right(starts, offset) - 1, 0)
        return self.pages[i][0]


_HSPACE = re.compile(r"[^\S\n]+")


def normalise_whitespace(raw: str) -> str:
    """Collapse runs of spaces/tabs, strip every line and drop blank lines.

    Line breaks are kept (as single ``\\n``) because in the statutes they separate clauses
    that often carry no punctuation of their own; the sentence splitter treats them as
    boundaries.
    """
    lines = (_HSPACE.sub(" ", line).strip() for line in raw.replace("\r\n", "\n").split("\n"))
    return "\n".join(line for line in lines if line)


# --- statutes ------------------------------------------------------------------------------


# The acts a statutes file may hold, with where each one's JSON keeps each field (the source
# repositories disagree), from the one registry: data/corpora/acts.json (``acts.ACTS``).
ACTS: Final[Mapping[str, Act]] = {act.code: act for act in REGISTERED_ACTS}

# File name (lower-cased) → act code, for the files in data/corpora/indian_law/.
ACT_BY_FILE_STEM: Final[Mapping[str, str]] = {
    Path(act.file).stem.lower(): act.code for act in REGISTERED_ACTS if act.file
}

_SECTION_RE = re.compile(r"^[0-9]+[A-Z]*$")


def detect_act(path: Path) -> str | None:
    """Act code for a statutes file name (``ipc.json`` → ``IPC``), or None if unknown."""
    return ACT_BY_FILE_STEM.get(path.stem.lower())


def load_statutes(path: Path, act: str | None = None) -> list[Document]:
    """Load one act's JSON file: one Document per section/article, ``doc_id`` ``<ACT>_<SECTION>``.

    Empty sections are skipped and duplicate section numbers merged into the first
    occurrence (identical repeats dropped), each with a logged warning.
    """
    code = (act or detect_act(path) or "").upper()
    if code not in ACTS:
        said = f"act {code!r} is not registered" if code else "cannot tell which act this is"
        raise CorpusFormatError(
            f"{path}: {said} (registered files: "
            f"{', '.join(sorted(f'{stem}.json' for stem in ACT_BY_FILE_STEM))}); register the "
            f"act and its file name in data/corpora/{REGISTRY_PATH.name} (data/corpora/README.md,"
            ' "Adding an act")',
            metadata={"path": str(path)},
        )
    spec = ACTS[code]
    if "title" not in spec.fields:
        logger.warning(
            "%s: the registry maps no title field for %s: no section has a title", path, code
        )
    data = _read_json(path)
    if code == "HMA" and _is_hma_csv_dump(data):
        records = _reparse_hma(data, path)
    elif isinstance(data, list):
        records = data
    else:
        raise CorpusFormatError(f"{path}: expected a JSON list of section records")

    reparsed = code == "HMA" and records is not data
    docs: dict[str, Document] = {}
    for i, record in enumerate(records):
        doc = _statute_document(record, spec, path, i)
        if doc is None:
            continue
        if reparsed:
            doc = dataclasses.replace(doc, metadata={"source_note": HMA_SOURCE_NOTE})
        previous = docs.get(doc.doc_id)
        if previous is None:
            docs[doc.doc_id] = doc
        elif f"\n{doc.text}\n" in f"\n{previous.text}\n":
            logger.warning(
                "%s: record %d repeats section %s verbatim; dropped", path, i, doc.section
            )
        else:
            logger.warning(
                "%s: record %d repeats section %s; merged its text into the first occurrence",
                path,
                i,
                doc.section,
            )
            docs[doc.doc_id] = dataclasses.replace(previous, text=f"{previous.text}\n{doc.text}")
    return list(docs.values())


def _statute_document(record: object, spec: Act, path: Path, index: int) -> Document | None:
    if not isinstance(record, dict):
        raise CorpusFormatError(f"{path}: record {index} is not a JSON object")
    keys = spec.fields
    missing = [keys[f] for f in ("section", "text") if keys[f] not in record]
    if missing:
        field_map = ", ".join(f"{f}={k!r}" for f, k in keys.items())
        raise CorpusFormatError(
            f"{path}: record {index} lacks {', '.join(missing)} (expected the {spec.code} field "
            f"map of {REGISTRY_PATH.name}: {field_map})"
        )
    raw_section = record[keys["section"]]
    section = normalise_section(raw_section)
    if not _SECTION_RE.match(section):
        raise CorpusFormatError(
            f"{path}: record {index} has section number {raw_section!r}, "
            "expected digits optionally followed by letters"
        )
    # The source's footnote references are glued to the words ("trafficking1"): removed here,
    # the file stays as fetched (data/corpora/indian_law/SOURCE.md).
    text = without_footnote_markers(normalise_whitespace(str(record[keys["text"]] or "")))
    if not text:
        logger.warning("%s: %s section %s has no text; skipped", path, spec.code, section)
        return None
    chapter = record.get(keys["chapter"], "") if "chapter" in keys else ""
    chapter_title = record.get(keys["chapter_title"], "") if "chapter_title" in keys else ""
    if spec.code == "IPC":
        chapter_title = IPC_CHAPTER_TITLES.get(str(chapter_title), chapter_title)
    title = record.get(keys["title"]) if "title" in keys else ""
    if not title and "title" in keys:  # an act with no title field is warned of once
        logger.warning(
            "%s: record %d (%s section %s) has no title", path, index, spec.code, section
        )
    return Document(
        doc_id=f"{spec.code}_{section}",
        title=normalise_whitespace(str(title or "")).replace("\n", " "),
        text=text,
        act=spec.code,
        act_name=spec.name,
        section=section,
        chapter=str(chapter if chapter is not None else ""),
        chapter_title=str(chapter_title or ""),
    )


HMA_SOURCE_NOTE: Final = "re-parsed from malformed CSV rows; clauses lost in the source are missing"
_HMA_HEADER = "chapter,section,section_title,section_desc"
# A record starts with "<chapter>,<section>,<title>," and the description follows. The title
# never holds a comma in this file.
_HMA_RECORD = re.compile(r"^(\d+),(\d+[A-Za-z]*),([^,\"]+),(.*)$", re.S)


def _is_hma_csv_dump(data: object) -> bool:
    return (
        isinstance(data, list)
        and bool(data)
        and all(isinstance(r, dict) and list(r) == [_HMA_HEADER] for r in data)
    )


def _reparse_hma(data: list[dict[str, str]], path: Path) -> list[dict[str, str]]:
    """Rebuild hma.json's records from the CSV lines it holds as one-key objects.

    The csv module cannot do this: the quotes that should close each description were lost
    together with the continuation lines, so quoting is unbalanced. Instead a line that starts
    with ``chapter,section,title,`` opens a record and non-empty lines that do not are
    continuations of the open record's description. Clauses the source dropped stay missing.
    """
    records: list[dict[str, str]] = []
    for i, row in enumerate(data):
        line = str(row[_HMA_HEADER] or "").strip()
        if not line:
            continue
        match = _HMA_RECORD.match(line)
        if match:
            chapter, section, title, desc = match.groups()
            desc = desc.strip()
            if desc.startswith('"'):
                desc = desc[1:]
            records.append(
                {
                    "chapter": chapter,
                    "section": section,
                    "section_title": title,
                    "section_desc": desc,
                }
            )
        elif records:
            records[-1]["section_desc"] += "\n" + line
        else:
            raise CorpusFormatError(f"{path}: row {i} continues a record but none has started")
    for record in records:
        record["section_desc"] = record["section_desc"].strip().removesuffix('"')
    if not records:
        raise CorpusFormatError(f"{path}: no Hindu Marriage Act sections found in the CSV rows")
    logger.info("%s: re-parsed %d HMA sections from %d CSV rows", path, len(records), len(data))
    return records


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise CorpusFormatError(f"{path}: not UTF-8 ({exc})") from exc
    except json.JSONDecodeError as exc:
        raise CorpusFormatError(
            f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from exc


# --- JSONL -----------------------------------------------------------------------------------


def load_jsonl(path: Path) -> list[Document]:
    """Load ``{doc_id, title, text, metadata}`` lines; ``text`` may be a list of lines.

    A record is a statute section when its ``metadata`` names an act code and a section number
    and its ``doc_id`` is ``<ACT>_<SECTION>`` (``{"doc_id": "MTA_3A", ..., "metadata": {"act":
    "MTA", "section": "3A"}}``): those, with ``act_name``, ``chapter`` and ``chapter_title``,
    then fill the document's own fields, so the act filter, section references and citations
    read them as they read a statutes file's. Metadata that is not a statute section's (a
    ``section`` named "History") stays metadata, as before, with one warning per file. Blank
    lines are skipped; a record with no text is skipped with a warning naming its line; any
    other bad line raises CorpusFormatError naming its number, a ``doc_id`` no citation could
    name among them (a bracket, a control or invisible character, or longer than
    ``MAX_DOC_ID_CHARS``: the validator would refuse every request citing its chunks).
    """
    docs: list[Document] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise CorpusFormatError(f"{path}: not UTF-8 ({exc})") from exc
    unregistered: set[str] = set()
    not_statute: str | None = None
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            doc, why_not = _jsonl_document(json.loads(line))
        except (json.JSONDecodeError, ValueError, TypeError) as exc:
            raise CorpusFormatError(
                f"{path}:{lineno}: {exc}", metadata={"path": str(path), "line": str(lineno)}
            ) from exc
        if not doc.text:
            logger.warning("%s:%d: document %s has no text; skipped", path, lineno, doc.doc_id)
            continue
        if not doc.title:
            logger.warning("%s:%d: document %s has no title", path, lineno, doc.doc_id)
        if why_not and not_statute is None:
            not_statute = why_not
            logger.warning(
                "%s:%d: document %s is not read as a statute section (%s); its metadata stays"
                " metadata (the first such record of the file)",
                path,
                lineno,
                doc.doc_id,
                why_not,
            )
        if doc.act and doc.act not in ACTS and doc.act not in unregistered:
            unregistered.add(doc.act)
            logger.warning(
                "%s:%d: act %s is not in %s: the act filter and citations work, but questions"
                " that name the act or its sections are not read as naming it (data/corpora/"
                'README.md, "Adding an act")',
                path,
                lineno,
                doc.act,
                REGISTRY_PATH.name,
            )
        docs.append(doc)
    return docs


# Metadata keys a statute section written as JSONL uses for its own fields.
_STATUTE_KEYS: Final = ("act", "section", "act_name", "chapter", "chapter_title")


def _jsonl_document(record: object) -> tuple[Document, str]:
    """The record's document, and why metadata naming an act or section did not make it a
    statute section ("" when it did, or named neither)."""
    if not isinstance(record, dict):
        raise TypeError("expected a JSON object")
    doc_id = record.get("doc_id")
    if isinstance(doc_id, bool) or not isinstance(doc_id, str | int) or not str(doc_id).strip():
        raise ValueError("doc_id must be a non-empty string or an integer")
    doc_id = str(doc_id).strip()
    # Its chunks' ids must be ids a citation can name and a ValidateAnswer request may carry
    # (the validator refuses a request holding one, so every question retrieving it would fail).
    if len(doc_id) > MAX_DOC_ID_CHARS:
        raise ValueError(
            f"doc_id must be at most {MAX_DOC_ID_CHARS} characters (got {len(doc_id)}), so that"
            " its chunks' ids <doc_id>_<n> fit what a request may carry"
        )
    if problem := uncitable(doc_id):
        raise ValueError(f"doc_id {doc_id!r} {problem}")
    raw_text = record.get("text")
    if isinstance(raw_text, list) and all(isinstance(t, str) for t in raw_text):
        raw_text = "\n".join(raw_text)
    if not isinstance(raw_text, str):
        raise TypeError("text must be a string or a list of strings")
    title = record.get("title", "")
    if not isinstance(title, str):
        raise TypeError("title must be a string")
    metadata = record.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise TypeError("metadata must be an object")
    names_statute = bool({"act", "section"} & metadata.keys())
    why_not = _not_a_statute(doc_id, metadata) if names_statute else ""
    statute: dict[str, Any] = {}
    if names_statute and not why_not:
        statute = {key: metadata.pop(key) for key in _STATUTE_KEYS if key in metadata}
    act = str(statute.get("act", ""))
    registered = ACTS.get(act)
    document = Document(
        doc_id=doc_id,
        title=title.strip(),
        text=normalise_whitespace(raw_text),
        act=act,
        act_name=_as_str(statute.get("act_name") or (registered.name if registered else "")),
        section=normalise_section(statute["section"]) if statute else "",
        chapter=_as_str(statute.get("chapter", "")),
        chapter_title=_as_str(statute.get("chapter_title", "")),
        url=str(metadata.get("url", "")),
        metadata={str(k): _as_str(v) for k, v in metadata.items()},
    )
    return document, why_not


def _not_a_statute(doc_id: str, metadata: Mapping[str, Any]) -> str:
    """Why metadata naming an act or a section does not make a statute section, or ""."""
    act, raw_section = metadata.get("act"), metadata.get("section")
    if not isinstance(act, str) or not ACT_CODE.match(act):
        return f"metadata.act {act!r} is not an act code: 1-16 upper-case letters or digits"
    if not isinstance(raw_section, str | int) or isinstance(raw_section, bool):
        return "metadata.section is missing or not a string"
    section = normalise_section(raw_section)
    if not _SECTION_RE.match(section):
        return (
            f"metadata.section {raw_section!r} is not a section number: digits optionally"
            " followed by letters (sub-sections such as 12(1) are not supported)"
        )
    if doc_id != f"{act}_{section}":
        return f"doc_id {doc_id!r} is not {act}_{section}, the act and section its metadata names"
    return ""


def _as_str(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


# --- directories -----------------------------------------------------------------------------

TEXT_SUFFIXES: Final = (".txt", ".md")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)
_UNSAFE_ID_CHARS = re.compile(r"[^A-Za-z0-9_.-]+")


def load_directory(path: Path) -> list[Document]:
    """Load every .txt/.md file under ``path``; ``doc_id`` is the sanitised relative path stem."""
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES)
    docs: list[Document] = []
    seen: set[str] = set()
    for file in files:
        rel = file.relative_to(path)
        try:
            raw = file.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise CorpusFormatError(f"{file}: not UTF-8 ({exc})") from exc
        text = normalise_whitespace(raw)
        if not text:
            logger.warning("%s: empty file; skipped", file)
            continue
        doc_id = _unique(_sanitise_id(rel.with_suffix("").as_posix()), seen, file)
        heading = _HEADING.search(raw) if file.suffix.lower() == ".md" else None
        title = heading.group(1).strip() if heading else file.stem
        docs.append(
            Document(doc_id=doc_id, title=title, text=text, metadata={"path": rel.as_posix()})
        )
    return docs


def _sanitise_id(raw: str) -> str:
    return _UNSAFE_ID_CHARS.sub("_", raw.replace("/", "__")).strip("_") or "doc"


def _unique(doc_id: str, seen: set[str], source: Path) -> str:
    candidate, n = doc_id, 2
    while candidate in seen:
        candidate, n = f"{doc_id}-{n}", n + 1
    if candidate != doc_id:
        logger.warning("%s: doc_id %s already used; using %s", source, doc_id, candidate)
    seen.add(candidate)
    return candidate


# --- PDF -------------------------------------------------------------------------------------


def load_pdf(path: Path) -> list[Document]:
    """Load a PDF as one Document whose ``pages`` map text offsets back to page numbers."""
    try:
        reader = PdfReader(path)
        page_texts = [page.extract_text() or "" for page in reader.pages]
        title = str((reader.metadata.title if reader.metadata else None) or "").strip()
    except (PdfReadError, OSError, ValueError) as exc:
        raise CorpusFormatError(f"{path}: cannot read PDF ({exc})") from exc
    text, pages = join_pages(page_texts)
    if not text:
        logger.warning("%s: no extractable text (scanned PDF?); skipped", path)
        return []
    return [
        Document(
            doc_id=_sanitise_id(path.stem),
            title=title or path.stem,
            text=text,
            pages=pages,
            metadata={"path": path.name},
        )
    ]


def join_pages(page_texts: Iterable[str]) -> tuple[str, tuple[tuple[int, int, int], ...]]:
    """Normalise and join page texts with newlines; return the text and 1-based page spans."""
    parts: list[str] = []
    pages: list[tuple[int, int, int]] = []
    offset = 0
    for number, raw in enumerate(page_texts, start=1):
        page_text = normalise_whitespace(raw)
        if not page_text:
            continue
        if parts:
            offset += 1  # the "\n" joining this page to the previous one
        pages.append((number, offset, offset + len(page_text)))
        parts.append(page_text)
        offset += len(page_text)
    return "\n".join(parts), tuple(pages)


# --- dispatch --------------------------------------------------------------------------------


def detect_format(path: Path) -> str:
    """Guess a source's format from what it is: a directory, .jsonl, .pdf, or a statutes .json."""
    if path.is_dir():
        return "dir"
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return "jsonl"
    if suffix == ".pdf":
        return "pdf"
    if suffix == ".json":
        return "statutes"
    raise CorpusFormatError(
        f"{path}: cannot tell the format from the name; pass one of {', '.join(FORMATS)}"
    )


def load_documents(path: Path, fmt: str | None = None, *, act: str | None = None) -> list[Document]:
    """Load one source in ``fmt`` (guessed from the path when None); ``act`` overrides statutes."""
    if not path.exists():
        raise CorpusFormatError(f"{path}: no such file or directory", metadata={"path": str(path)})
    fmt = fmt or detect_format(path)
    if fmt == "statutes":
        return load_statutes(path, act)
    if fmt == "jsonl":
        return load_jsonl(path)
    if fmt == "dir":
        if not path.is_dir():
            raise CorpusFormatError(f"{path}: format 'dir' needs a directory")
        return load_directory(path)
    if fmt == "pdf":
        return load_pdf(path)
    raise CorpusFormatError(f"unknown corpus format {fmt!r}; expected one of {', '.join(FORMATS)}")
