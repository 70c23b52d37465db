"""Dataset adapters: each published format becomes an ingestible corpus plus a list of EvalItems."""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from evaluation.golden import IpcSection, find_key_sentence, load_golden, load_ipc_sections
from evaluation.matching import normalize_ws
from evaluation.records import EvalItem, GoldEvidence, InputFile, RunInfo
from services.common.errors import CorpusFormatError

CorpusFormat = Literal["jsonl", "statutes"]

DATASETS = ("ipc", "squad2", "hotpotqa", "scifact")
DEFAULT_PATHS: dict[str, Path] = {
    "ipc": Path("data/golden/ipc_golden_v1.jsonl"),
    "squad2": Path("data/eval/squad2/dev.json"),
    "hotpotqa": Path("data/eval/hotpotqa/dev.jsonl"),
    "scifact": Path("data/eval/scifact"),
}
IPC_CORPUS = Path("data/corpora/indian_law/ipc.json")
CACHE_ROOT = Path("var/eval")

_UNSAFE = re.compile(r"[^A-Za-z0-9]+")


@dataclass(frozen=True, slots=True)
class CorpusDoc:
    """One document for the retrieval ingest CLI's JSONL format."""

    doc_id: str
    title: str
    text: str
    metadata: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> str:
        """One canonical JSONL line (sorted keys, so the corpus checksum is stable)."""
        record = {
            "doc_id": self.doc_id,
            "title": self.title,
            "text": self.text,
            "metadata": self.metadata,
        }
        return json.dumps(record, ensure_ascii=False, sort_keys=True)


@dataclass(frozen=True, slots=True)
class EvalDataset:
    """Items and corpus of one dataset, with provenance.

    ``limit`` selects the first N items in file order; the corpus is always the whole file's, so a
    limited run uses the same index as a full one and its cache entry is shared.
    For ``corpus_format == "statutes"`` the corpus is ``statutes_file`` as is; ``docs`` then holds
    the same sections for checks and reports.
    """

    name: str
    items: tuple[EvalItem, ...]
    docs: tuple[CorpusDoc, ...]
    corpus_format: CorpusFormat
    inputs: tuple[InputFile, ...]
    n_total: int
    limit: int | None = None
    statutes_file: Path | None = None

    def corpus_bytes(self) -> bytes:
        """Exactly the bytes the ingest CLI reads for this corpus."""
        if self.statutes_file is not None:
            return self.statutes_file.read_bytes()
        return "".join(doc.to_json() + "\n" for doc in self.docs).encode("utf-8")

    @property
    def corpus_checksum(self) -> str:
        """sha256 of the corpus file that is ingested; the key for caching a built index."""
        digest = hashlib.sha256(self.corpus_format.encode() + b"\n")
        digest.update(self.corpus_bytes())
        return digest.hexdigest()

    def cache_dir(self, root: Path = CACHE_ROOT) -> Path:
        """Where an index built from this corpus is cached: ``<root>/<dataset>/<checksum[:16]>``."""
        return root / self.name / self.corpus_checksum[:16]

    def write_corpus(self, directory: Path) -> Path:
        """Write the corpus file to ingest into ``directory`` and return its path."""
        directory.mkdir(parents=True, exist_ok=True)
        # A statutes file keeps its name: the ingest CLI may tell the act by it (ipc.json).
        name = self.statutes_file.name if self.statutes_file is not None else "corpus.jsonl"
        path = directory / name
        path.write_bytes(self.corpus_bytes())
        return path

    def ingest_args(self, corpus_file: Path, out_dir: Path) -> list[str]:
        """Arguments after ``python -m services.retrieval.ingest`` that index this corpus."""
        return ["--format", self.corpus_format, "--out", str(out_dir), str(corpus_file)]


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _input(path: Path) -> InputFile:
    return InputFile(path=str(path), sha256=file_sha256(path), size_bytes=path.stat().st_size)


def _limited(items: list[EvalItem], limit: int | None) -> tuple[EvalItem, ...]:
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    return tuple(items if limit is None else items[:limit])


def safe_id(text: str) -> str:
    """An id made of ASCII letters, digits and underscores (accents folded, the rest collapsed)."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return _UNSAFE.sub("_", folded).strip("_")


def _short_hash(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:8]


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise CorpusFormatError(f"{path}: cannot read JSON: {exc}") from exc


def _read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise CorpusFormatError(f"{path}: cannot read: {exc}") from exc
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CorpusFormatError(f"{path}:{number}: invalid JSON: {exc.msg}") from exc
        if not isinstance(record, dict):
            raise CorpusFormatError(f"{path}:{number}: expected a JSON object")
        yield number, record


# --------------------------------------------------------------------------------------- ipc


def _ipc_doc(section: IpcSection) -> CorpusDoc:
    return CorpusDoc(
        doc_id=section.doc_id,
        title=section.title,
        text=section.text,
        metadata={
            "act": "IPC",
            "section": section.section,
            "chapter": str(section.chapter),
            "chapter_title": section.chapter_title,
        },
    )


def load_ipc(
    path: Path, *, corpus_path: Path = IPC_CORPUS, limit: int | None = None
) -> EvalDataset:
    """The IPC golden set (``load_golden`` format) over the statutes file it was written against."""
    golden = load_golden(path)
    sections = load_ipc_sections(corpus_path)
    items: list[EvalItem] = []
    for g in golden:
        gold: list[GoldEvidence] = []
        for sentence in g.key_sentences:
            doc_id = find_key_sentence(g, sentence, sections)
            if not doc_id:
                raise CorpusFormatError(
                    f"{path}:{g.line}: key sentence not in gold docs {list(g.gold_doc_ids)}: "
                    f"{sentence[:60]!r}"
                )
            gold.append(GoldEvidence(doc_id=doc_id, text=normalize_ws(sentence)))
        items.append(
            EvalItem(
                item_id=g.id,
                question=g.question,
                answerable=g.answerable,
                gold=tuple(gold),
                gold_answers=g.answer_contains,
                answer_match="all",
                subset=g.intent.value,
                intent=g.intent.value,
            )
        )
    return EvalDataset(
        name="ipc",
        items=_limited(items, limit),
        docs=tuple(_ipc_doc(s) for s in sections.values()),
        corpus_format="statutes",
        inputs=(_input(path), _input(corpus_path)),
        n_total=len(items),
        limit=limit,
        statutes_file=corpus_path,
    )


# ------------------------------------------------------------------------------------ squad2


def _sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the sentences pysbd finds in ``text``, located in order."""
    import pysbd  # a runtime dependency; imported here so loading other datasets does not need it

    segmenter = pysbd.Segmenter(language="en", clean=False)
    spans: list[tuple[int, int]] = []
    position = 0
    for piece in segmenter.segment(text):
        start = text.find(piece, position)
        if start < 0:  # pysbd changed the text; fall back to the rest as one sentence
            spans.append((position, len(text)))
            break
        spans.append((start, start + len(piece)))
        position = start + len(piece)
    return spans


def _answer_sentence(context: str, spans: list[tuple[int, int]], start: int, end: int) -> str:
    covering = [(a, b) for a, b in spans if a < end and start < b]
    if not covering:
        return context[start:end]
    return normalize_ws(context[covering[0][0] : covering[-1][1]])


def load_squad2(path: Path, *, limit: int | None = None) -> EvalDataset:
    """SQuAD v2 JSON: one doc per paragraph; gold is the sentence holding each answer span.

    Doc ids are ``<article title>_p<paragraph index>``. Each distinct answer sentence is its own
    alternative gold group (annotators sometimes mark spans in different sentences).
    """
    raw = _read_json(path)
    if not isinstance(raw, dict) or not isinstance(raw.get("data"), list):
        raise CorpusFormatError(f"{path}: expected SQuAD JSON with a 'data' list")
    docs: list[CorpusDoc] = []
    items: list[EvalItem] = []
    for a_index, article in enumerate(raw["data"]):
        try:
            title = str(article["title"])
            paragraphs = article["paragraphs"]
        except (KeyError, TypeError) as exc:
            raise CorpusFormatError(f"{path}: article {a_index}: {exc!r}") from exc
        for p_index, paragraph in enumerate(paragraphs):
            where = f"{path}: article {a_index} paragraph {p_index}"
            try:
                context = str(paragraph["context"])
                qas = paragraph["qas"]
            except (KeyError, TypeError) as exc:
                raise CorpusFormatError(f"{where}: {exc!r}") from exc
            doc_id = f"{safe_id(title)}_p{p_index}"
            docs.append(
                CorpusDoc(doc_id, title, context, {"article": title, "paragraph": str(p_index)})
            )
            spans: list[tuple[int, int]] | None = None
            for qa in qas:
                try:
                    impossible = bool(qa.get("is_impossible", False))
                    answers = [(str(x["text"]), int(x["answer_start"])) for x in qa["answers"]]
                    item_id, question = str(qa["id"]), str(qa["question"])
                except (KeyError, TypeError, ValueError) as exc:
                    raise CorpusFormatError(f"{where}: question: {exc!r}") from exc
                gold: list[GoldEvidence] = []
                if not impossible and answers:
                    spans = spans if spans is not None else _sentence_spans(context)
                    sentences = dict.fromkeys(
                        _answer_sentence(context, spans, start, start + len(text))
                        for text, start in answers
                    )
                    gold = [GoldEvidence(doc_id, s, group=i) for i, s in enumerate(sentences)]
                items.append(
                    EvalItem(
                        item_id=item_id,
                        question=question,
                        answerable=not impossible and bool(answers),
                        gold=tuple(gold),
                        gold_answers=tuple(dict.fromkeys(t for t, _ in answers)),
                        answer_match="any",
                        source_docs=(doc_id,),
                    )
                )
    return EvalDataset(
        name="squad2",
        items=_limited(items, limit),
        docs=tuple(docs),
        corpus_format="jsonl",
        inputs=(_input(path),),
        n_total=len(items),
        limit=limit,
    )


# ---------------------------------------------------------------------------------- hotpotqa


def load_hotpotqa(path: Path, *, limit: int | None = None) -> EvalDataset:
    """HotpotQA (Hugging Face layout, JSONL): docs are the union of all context paragraphs.

    A doc's text is the concatenation of its sentences exactly as given (sentences after the first
    keep their leading space), so each gold supporting fact is an exact substring; gold text is the
    sentence stripped. Doc ids are sanitised titles; titles that sanitise alike get a hash suffix,
    and a title whose paragraph differs between questions (beyond whitespace) gets one doc per
    version, ``<id>_v2`` and so on.
    """
    records = list(_read_jsonl(path))
    paragraphs: dict[tuple[str, str], list[str]] = {}  # (title, normalised text) -> sentences
    versions: dict[str, list[str]] = {}  # title -> normalised texts in first-seen order
    parsed: list[tuple[int, dict[str, Any], list[tuple[str, list[str]]]]] = []
    for number, record in records:
        try:
            context = record["context"]
            pairs = [
                (str(t), [str(s) for s in sents])
                for t, sents in zip(context["title"], context["sentences"], strict=True)
            ]
        except (KeyError, TypeError, ValueError) as exc:
            raise CorpusFormatError(f"{path}:{number}: bad context: {exc!r}") from exc
        for title, sentences in pairs:
            key = (title, normalize_ws("".join(sentences)))
            if key not in paragraphs:
                paragraphs[key] = sentences
                versions.setdefault(title, []).append(key[1])
        parsed.append((number, record, pairs))
    base_ids: dict[str, list[str]] = {}
    for title in versions:
        base_ids.setdefault(safe_id(title) or "doc", []).append(title)
    title_id: dict[str, str] = {}
    for base, titles in base_ids.items():
        for title in titles:
            title_id[title] = base if len(titles) == 1 else f"{base}_{_short_hash(title)}"

    def doc_id_for(title: str, text: str) -> str:
        version = versions[title].index(text)
        return title_id[title] if version == 0 else f"{title_id[title]}_v{version + 1}"

    docs = [
        CorpusDoc(doc_id_for(title, text), title, "".join(sentences), {"title": title})
        for (title, text), sentences in paragraphs.items()
    ]
    items: list[EvalItem] = []
    for number, record, pairs in parsed:
        by_title = {title: sentences for title, sentences in pairs}
        try:
            facts = record["supporting_facts"]
            gold = []
            for title, sent_id in zip(facts["title"], facts["sent_id"], strict=True):
                sentences = by_title[title]
                doc_id = doc_id_for(title, normalize_ws("".join(sentences)))
                gold.append(GoldEvidence(doc_id, normalize_ws(sentences[int(sent_id)])))
            item = EvalItem(
                item_id=str(record["id"]),
                question=str(record["question"]),
                answerable=True,
                gold=tuple(dict.fromkeys(gold)),
                gold_answers=(str(record["answer"]),),
                answer_match="any",
                subset=str(record.get("type", "")),
            )
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise CorpusFormatError(f"{path}:{number}: bad supporting facts: {exc!r}") from exc
        items.append(item)
    return EvalDataset(
        name="hotpotqa",
        items=_limited(items, limit),
        docs=tuple(docs),
        corpus_format="jsonl",
        inputs=(_input(path),),
        n_total=len(items),
        limit=limit,
    )


# ----------------------------------------------------------------------------------- scifact


def load_scifact(path: Path, *, limit: int | None = None) -> EvalDataset:
    """SciFact (official schema) from a directory with corpus.jsonl, claims.jsonl, claims_nei.jsonl.

    The claim text is the question. SUPPORT rationales are the gold (each rationale is one
    alternative group). A claim whose evidence is only CONTRADICT is answerable too, with the
    contradicting rationales as gold, because the corpus does speak to it; it is reported as its
    own subset so the reader sees how often such claims are refused. Claims without evidence
    (NEI) are unanswerable. Items are ordered by claim id across both claim files, so a LIMIT
    prefix mixes the three kinds. claims_nei.jsonl is optional.
    """
    corpus_path = path / "corpus.jsonl"
    claim_paths = [path / "claims.jsonl", path / "claims_nei.jsonl"]
    abstracts: dict[str, list[str]] = {}
    docs: list[CorpusDoc] = []
    for number, record in _read_jsonl(corpus_path):
        try:
            doc_id = str(record["doc_id"])
            sentences = [str(s) for s in record["abstract"]]
            title = str(record["title"])
        except (KeyError, TypeError) as exc:
            raise CorpusFormatError(f"{corpus_path}:{number}: {exc!r}") from exc
        abstracts[doc_id] = sentences
        structured = "true" if record.get("structured") else "false"
        docs.append(CorpusDoc(doc_id, title, " ".join(sentences), {"structured": structured}))
    claims: list[tuple[int, EvalItem]] = []
    inputs = [_input(corpus_path)]
    for claims_path in claim_paths:
        if not claims_path.exists() and claims_path.name == "claims_nei.jsonl":
            continue
        inputs.append(_input(claims_path))
        for number, record in _read_jsonl(claims_path):
            try:
                claim_id = int(record["id"])
                item = _scifact_item(record, abstracts)
            except (KeyError, TypeError, ValueError, IndexError) as exc:
                raise CorpusFormatError(f"{claims_path}:{number}: bad claim: {exc!r}") from exc
            claims.append((claim_id, item))
    claims.sort(key=lambda pair: pair[0])
    items = [item for _, item in claims]
    return EvalDataset(
        name="scifact",
        items=_limited(items, limit),
        docs=tuple(docs),
        corpus_format="jsonl",
        inputs=tuple(inputs),
        n_total=len(items),
        limit=limit,
    )


def _scifact_item(record: dict[str, Any], abstracts: dict[str, list[str]]) -> EvalItem:
    rationales: dict[str, list[tuple[str, list[int]]]] = {"SUPPORT": [], "CONTRADICT": []}
    for doc_id, entries in record["evidence"].items():
        for entry in entries:
            label = str(entry["label"])
            if label not in rationales:
                raise ValueError(f"unknown label {label!r}")
            rationales[label].append((str(doc_id), [int(i) for i in entry["sentences"]]))
    label = next((k for k in ("SUPPORT", "CONTRADICT") if rationales[k]), "NEI")
    gold: list[GoldEvidence] = []
    for group, (doc_id, indices) in enumerate(rationales.get(label, [])):
        gold.extend(
            GoldEvidence(doc_id, normalize_ws(abstracts[doc_id][i]), group) for i in indices
        )
    cited = [str(d) for d in record.get("cited_doc_ids", [])]
    return EvalItem(
        item_id=str(record["id"]),
        question=str(record["claim"]),
        answerable=label != "NEI",
        gold=tuple(gold),
        subset=label,
        source_docs=tuple(dict.fromkeys([*record["evidence"], *cited])),
    )


# ----------------------------------------------------------------------------------- dispatch

_LOADERS: dict[str, Callable[..., EvalDataset]] = {
    "ipc": load_ipc,
    "squad2": load_squad2,
    "hotpotqa": load_hotpotqa,
    "scifact": load_scifact,
}


@dataclass(frozen=True, slots=True)
class Tuning:
    """Whether a set was read to choose anything, so every figure from it can say so.

    ``label``: "tuned", "never tuned" or "mixed"; ``split``: the set is split by
    ``in_tune_half`` (even crc32 tuned, odd half reported), so reports score each half too.

    What else was read of a split set, in both halves, so that the labels of the halves and of
    the clean subset follow from the register rather than from a constant:

    - ``read_first``: its first N items (loader order) were read (the keyword rules);
    - ``read_subsets``: items of these subsets were read (HotpotQA's comparison questions);
    - ``read_span``: the tune half was read among the first N items only (LIMIT 300); items
      past it were never read, in either half;
    - ``clean_label`` / ``clean_note``: the label of the clean subset (odd crc32, position
      ``read_first`` or later, not a read subset) and what still touches it, if anything.
    """

    label: str
    note: str
    split: bool = False
    read_first: int = 0
    read_subsets: tuple[str, ...] = ()
    read_span: int | None = None
    clean_label: str = "never tuned"
    clean_note: str = ""

    @property
    def has_clean(self) -> bool:
        """A split set whose report half was read in part: it has a clean subset."""
        return self.split and bool(self.read_first or self.read_subsets)

    def half_label(self, half: str) -> str:
        """``even crc32, tuned``; the report half is **mixed** when the register says part of
        it was read (``odd crc32, mixed: ...``), never tuned otherwise."""
        if half == "tune":
            return "even crc32, tuned"
        if half == "report":
            if not self.has_clean:
                return "odd crc32, never tuned"
            return f"odd crc32, mixed: {self._read_text()}"
        suffix = f": {self.clean_label}" + (f"; {self.clean_note}" if self.clean_note else "")
        if half == "clean":
            return self._clean_text() + suffix
        if half == "clean_no_twin":
            return (
                f"{self._clean_text()}, no near-twin of a read question "
                f"(Jaccard ≥ {TWIN_JACCARD:g}){suffix}"
            )
        if half == "clean_unshared":
            return (
                f"{self._clean_text()}, no near-twin of a read question and no source document "
                f"shared with one{suffix}"
            )
        raise ValueError(f"unknown half {half!r}")

    def _read_text(self) -> str:
        parts = []
        if self.read_first:
            parts.append(f"its items 1–{self.read_first} were read for the keyword rules")
        if self.read_subsets:
            parts.append(f"its {'/'.join(self.read_subsets)} questions were read for patterns")
        return "; ".join(parts)

    def _clean_text(self) -> str:
        text = "odd crc32"
        if self.read_first:
            text += f", item {self.read_first + 1} on"
        if self.read_subsets:
            text += f", not {'/'.join(self.read_subsets)}"
        return text

    def in_clean(self, index: int, item_id: str, subset: str) -> bool:
        """Item ``index`` (0-based, loader order) is in the clean subset: a report-half item
        past the items read for the keyword rules, not of a subset read in both halves."""
        return (
            self.has_clean
            and not in_tune_half(item_id)
            and index >= self.read_first
            and subset not in self.read_subsets
        )

    def was_read(self, index: int, item_id: str, subset: str) -> bool:
        """Item ``index`` was read to choose something (the tune half within ``read_span``,
        the first ``read_first`` items, a read subset)."""
        within = self.read_span is None or index < self.read_span
        if not self.split:
            return self.label != "never tuned"
        return within and (
            in_tune_half(item_id) or index < self.read_first or subset in self.read_subsets
        )


# Two questions are near-twins when their word sets overlap this much (Jaccard): SQuAD 2.0's
# unanswerable questions are often one-word edits of an answerable one on the same paragraph.
TWIN_JACCARD = 0.7

_KEYWORD_RULES = (
    "its first 150 items (both halves) were read to write the keyword rules (2026-11-23)"
)
# The validator benchmark builds cases from HotpotQA and SciFact and calibrates the validator's
# thresholds on its own split of them; extractive answers quote verbatim, which the validator
# accepts without its model, so the end-to-end figures do not depend on those thresholds.
_VALIDATOR = (
    "the validator's thresholds were calibrated on bench.validator_accuracy's own split of its "
    "items (no end-to-end figure depends on them: verbatim quotes pass without the model)"
)
# By the last two parts of the data path; one place for what docs/EVALUATION.md says set by set.
_TUNING: dict[str, Tuning] = {
    "golden/ipc_golden_v1.jsonl": Tuning(
        "tuned", "the keyword rules and the answerability thresholds and defaults were chosen on it"
    ),
    "golden/ipc_plain_tune_v1.jsonl": Tuning(
        "tuned", "read to choose the answerability calibration, weights and retrieval candidates"
    ),
    "golden/ipc_plain_v1.jsonl": Tuning(
        "never tuned",
        "written outside the team; only ever scored, but 38 of its 206 questions have a "
        "near-duplicate among the training questions (since model v2; python -m "
        "bench.contamination gives the 168 others) and its refusal reasons of 2026-11-24 set "
        "the direction of issue 13",
    ),
    "golden/ipc_multipart_v1.jsonl": Tuning(
        "never tuned",
        "written 2026-11-27 by a helper that read only the corpus and the record format; "
        "report-only, scored in counts (docs/EVALUATION.md, 'A fresh set of multi-part "
        "questions')",
    ),
    "golden/ipc_statements_v1.jsonl": Tuning(
        "mixed", "even-crc32 half tuned (statement thresholds), odd half never tuned", split=True
    ),
    "squad2/dev.json": Tuning(
        "mixed",
        "even-crc32 half of the first 300 tuned (answerability); " + _KEYWORD_RULES,
        split=True,
        read_first=150,
        read_span=300,
    ),
    "hotpotqa/dev.jsonl": Tuning(
        "mixed",
        "even-crc32 half tuned since 2026-11-26 01:01 UTC; "
        + _KEYWORD_RULES
        + "; its comparison questions (both halves) were read to write the comparison patterns; "
        + _VALIDATOR,
        split=True,
        read_first=150,
        read_subsets=("comparison",),
        read_span=300,
    ),
    "eval/scifact": Tuning(
        "mixed",
        "even-crc32 half of the first 300 tuned since 2026-11-26 07:14 UTC; "
        + _KEYWORD_RULES
        + "; the retrieval defaults were chosen on all 321 claims with evidence "
        "(docs/RETRIEVAL.md); " + _VALIDATOR,
        split=True,
        read_first=150,
        read_span=300,
        clean_label="mixed",
        clean_note="never tuned for answering; the retrieval defaults were chosen on all 321 "
        "claims with evidence, its not-enough-info claims were never read",
    ),
}


def tuning_of(data_path: Path) -> Tuning:
    """What the set at ``data_path`` was tuned on; a file not registered here says so."""
    key = "/".join(data_path.parts[-2:])
    return _TUNING.get(key, Tuning("unrecorded", f"{key} is not in evaluation/datasets.py"))


def in_tune_half(item_id: str) -> bool:
    """The split for choosing thresholds on a dev slice: items whose id has an even crc32 are
    the tune half; the others, the report half, are never read to choose anything."""
    return zlib.crc32(item_id.encode()) % 2 == 0


def load_dataset(name: str, path: Path | None = None, *, limit: int | None = None) -> EvalDataset:
    """Load dataset ``name`` from ``path`` (default: its dev copy), first ``limit`` items."""
    if name not in _LOADERS:
        raise ValueError(f"unknown dataset {name!r}; choose one of {', '.join(DATASETS)}")
    return _LOADERS[name](path if path is not None else DEFAULT_PATHS[name], limit=limit)


def missing_gold_text(dataset: EvalDataset) -> list[str]:
    """Gold sentences that are not substrings of their doc's text (empty when every one is)."""
    texts = {doc.doc_id: normalize_ws(doc.text) for doc in dataset.docs}
    return [
        f"{item.item_id}: {g.doc_id}: {g.text[:60]!r}"
        for item in dataset.items
        for g in item.gold
        if g.text not in texts.get(g.doc_id, "")
    ]


def run_info(
    dataset: EvalDataset,
    *,
    data_path: Path,
    command: str,
    config: dict[str, str] | None = None,
    started_at: datetime | None = None,
) -> RunInfo:
    """Provenance for a report on ``dataset``: inputs with checksums, LIMIT, command and time."""
    moment = started_at or datetime.now(UTC)
    tuning = tuning_of(data_path)
    return RunInfo(
        dataset=dataset.name,
        data_path=str(data_path),
        inputs=dataset.inputs,
        corpus_checksum=dataset.corpus_checksum,
        n_total=dataset.n_total,
        limit=dataset.limit,
        command=command,
        started_at=moment.isoformat(timespec="seconds"),
        config=dict(config or {}),
        tuning=tuning.label,
        tuning_note=tuning.note,
    )
