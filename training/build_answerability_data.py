"""Build the answerability training mix: does this sentence answer this question?

    python -m training.build_answerability_data [--shared ../shared/data/train]

Writes ``var/train/data/answerability_plain/{train,heldback}.jsonl.gz`` and ``manifest.json``
(``python -m training.add_statute_headings`` derives the vendored, headed mix from it). Each line
is ``{"premise": sentence, "hypothesis": question, "label": "answers" | "not_answers", "source"}``
(premise/hypothesis so the entailment trainer reads it unchanged).

Sources (licences allow shipping a model trained on them; see SOURCE.md):
- SQuAD 2.0 train subset: the sentence holding the answer span answers; other sentences of the
  paragraph and the most similar sentence of another paragraph do not; an unanswerable question
  against its paragraph's most similar sentence does not. **Hard negatives** are made the way
  SQuAD 2.0's own unanswerables were written: an answerable question changed so that its answer
  sentence no longer answers it (a name from another paragraph swapped in, a number or year
  changed, a negation inserted) and paired with that very sentence.
- HotpotQA (500 train questions; 300 official-dev questions outside the evaluation slices): a
  supporting sentence answers (part of) its question; the distractor sentences sharing most
  words with it do not.
- IPC: template questions about each section ("What is the punishment for X?", "What is X?")
  against the section's sentences and other sections' penalty sentences.
- IPC, in plain words (``--ipc-questions``, ``training/sources/ipc_plain_questions_v*.jsonl``):
  questions the team wrote in everyday words ("How long can the thief get for stealing from a
  home?"), each with its gold section's answering sentences (positives); the sentences BM25
  ranks highest for the question in other sections (what retrieval would hand synthesis) are
  negatives, and so are an unanswerable question's top sentences. Repeated
  ``--ipc-question-repeats`` times, since they are few against the SQuAD pairs.

Sentences are split with the validator's splitter, the project's one definition of a sentence.
Groups (a SQuAD paragraph, a HotpotQA question, an IPC section) are split 90/10 into train and
held-back before any pair is made, so no held-back group is trained on.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from services.common.language.sentences import split_sentences
from training.build_data import read_jsonl, write_mix
from training.statute_pairs import Section, offence_phrase, penalty_clause

ANSWERS, NOT_ANSWERS = "answers", "not_answers"
DEFAULT_SEED = 20261124
_WORD = re.compile(r"[a-z0-9]{3,}")
_NAME = re.compile(r"\b(?:[A-Z][\w'’.-]+)(?:\s+(?:of\s+|the\s+)?[A-Z][\w'’.-]+)*")
_NUMBER = re.compile(r"\b\d{1,4}(?:[.,]\d+)?\b")
_AUX = re.compile(r"\b(is|was|are|were|did|does|do|has|had|have|can|could|will|would)\b")


def sentences(text: str) -> list[str]:
    return [text[s:e].strip() for s, e in split_sentences(text) if text[s:e].strip()]


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def held_back(group: str) -> bool:
    return zlib.crc32(group.encode()) % 10 == 0


def pair(sentence: str, question: str, label: str, source: str, group: str) -> dict[str, str]:
    return {
        "premise": sentence,
        "hypothesis": question,
        "label": label,
        "source": source,
        "group": group,
    }


def changed_questions(
    question: str, answer_sentence: str, other_names: Sequence[str], rng: random.Random
) -> Iterator[tuple[str, str]]:
    """Edits after which ``answer_sentence`` no longer answers ``question`` (SQuAD 2.0 style)."""
    names = [m.group(0) for m in _NAME.finditer(question) if m.start() > 0]
    foreign = [n for n in other_names if n not in answer_sentence and n not in question]
    if names and foreign:
        yield question.replace(rng.choice(names), rng.choice(foreign), 1), "hard_entity"
    numbers = _NUMBER.findall(question)
    if numbers:
        n = rng.choice(numbers)
        if n.isdigit():
            new = str(int(n) + rng.choice((-7, -3, 2, 5, 11)))
            if new not in answer_sentence:
                yield re.sub(rf"\b{re.escape(n)}\b", new, question, count=1), "hard_number"
    aux = _AUX.search(question)
    if aux and " not " not in question:
        yield question[: aux.end()] + " not" + question[aux.end() :], "hard_negation"


def squad_pairs(path: Path, rng: random.Random) -> Iterator[dict[str, str]]:
    data = json.loads(path.read_text(encoding="utf-8"))["data"]
    for article in data:
        paragraphs = [(p, sentences(p["context"])) for p in article["paragraphs"]]
        names = sorted({m.group(0) for p, _ in paragraphs for m in _NAME.finditer(p["context"])})
        for k, (paragraph, sents) in enumerate(paragraphs):
            # Held back by paragraph: the 10 articles are too few to split by article.
            group = f"squad:{article['title']}:{k}"
            context = paragraph["context"]
            spans = [(context.find(s), s) for s in sents]
            others = [s for p2, ss in paragraphs if p2 is not paragraph for s in ss]
            for qa in paragraph["qas"]:
                question = qa["question"].strip()
                qw = _words(question)
                if qa.get("is_impossible"):
                    ranked = sorted(sents, key=lambda s: -len(qw & _words(s)))
                    for s in ranked[:2]:
                        yield pair(s, question, NOT_ANSWERS, "squad_impossible", group)
                    continue
                start = qa["answers"][0]["answer_start"]
                gold = next((s for at, s in reversed(spans) if 0 <= at <= start), None)
                if gold is None:
                    continue
                yield pair(gold, question, ANSWERS, "squad_answer", group)
                rest = [s for s in sents if s != gold]
                for s in rng.sample(rest, min(2, len(rest))):
                    yield pair(s, question, NOT_ANSWERS, "squad_other_sentence", group)
                if others:
                    pool = rng.sample(others, min(40, len(others)))
                    close = max(pool, key=lambda s: len(qw & _words(s)))
                    yield pair(close, question, NOT_ANSWERS, "squad_other_paragraph", group)
                for changed, rule in changed_questions(question, gold, names, rng):
                    if rng.random() < 0.5:
                        yield pair(gold, changed, NOT_ANSWERS, f"squad_{rule}", group)


def hotpot_pairs(
    rpt: Sequence[dict[str, object]], ecm: Sequence[dict[str, object]]
) -> Iterator[dict[str, str]]:
    for row in rpt:
        group = f"hotpot:{row['id']}"
        question = str(row["question"]).strip()
        context = row["context"]
        titles: list[str] = context["title"]  # type: ignore[index]
        paragraphs: list[list[str]] = context["sentences"]  # type: ignore[index]
        sf = row["supporting_facts"]
        gold = sorted(set(zip(sf["title"], sf["sent_id"], strict=True)))  # type: ignore[index]
        gold_text = {
            paragraphs[titles.index(t)][i].strip()
            for t, i in gold
            if t in titles and i < len(paragraphs[titles.index(t)])
        }
        for s in sorted(gold_text):
            yield pair(s, question, ANSWERS, "hotpot_support", group)
        qw = _words(question)
        distractors = sorted(
            {
                s.strip()
                for ss in paragraphs
                for s in ss
                if s.strip() and s.strip() not in gold_text
            },
            key=lambda s: (-len(qw & _words(s)), s),
        )
        for s in distractors[:2]:
            yield pair(s, question, NOT_ANSWERS, "hotpot_distractor", group)
    for row in ecm:
        question = str(row["question"]).strip()
        for s in row["evidence"]:  # type: ignore[attr-defined]
            yield pair(
                str(s).strip(), question, ANSWERS, "hotpot_support", f"hotpot-ecm:{question}"
            )


_PUNISH_QUESTIONS = (
    "What is the punishment for {x}?",
    "How is {x} punished under the IPC?",
    "What penalty does the law provide for {x}?",
    "How long can someone be jailed for {x}?",
)
_DEFINE_QUESTIONS = ("What is {x}?", "How does the IPC define {x}?", "What counts as {x}?")


def ipc_pairs(sections: Sequence[Section], rng: random.Random) -> Iterator[dict[str, str]]:
    penalties = [(s, x) for s in sections for x in s.sentences if penalty_clause(x)]
    for section in sections:
        group = f"ipc:{section.doc_id}"
        offence = offence_phrase(section.title)
        own = [x for x in section.sentences if penalty_clause(x)]
        if len(offence.split()) < 2 and not own:
            continue  # "Offence", "Act": too generic to ask about
        if own:
            question = rng.choice(_PUNISH_QUESTIONS).format(x=offence)
            yield pair(own[0], question, ANSWERS, "ipc_punishment", group)
            for other, sentence in rng.sample(penalties, 2):
                if other.doc_id != section.doc_id:
                    yield pair(sentence, question, NOT_ANSWERS, "ipc_other_penalty", group)
        elif not own and section.sentences:
            question = rng.choice(_DEFINE_QUESTIONS).format(x=offence)
            yield pair(section.sentences[0], question, ANSWERS, "ipc_definition", group)
            other, sentence = rng.choice(penalties)
            if other.doc_id != section.doc_id:
                yield pair(sentence, question, NOT_ANSWERS, "ipc_other_penalty", group)


def _norm(text: str) -> str:
    return " ".join(text.split())


def ipc_question_pairs(
    questions: Sequence[dict[str, object]],
    sections: Sequence[Section],
    *,
    negatives: int = 3,
    dense_negatives: int = 0,
    encoder: Any = None,
) -> Iterator[dict[str, str]]:
    """Pairs from hand-written plain-language IPC questions (module docstring).

    A section sentence answers when it lies inside one of the question's key sentences or holds
    one (the writer quoted the section text; the chunker may split it further). Negatives are the
    ``negatives`` sentences of other sections that BM25, with retrieval's own query tokens
    (everyday words included), ranks highest for the question, then (``dense_negatives``, with
    ``encoder``: retrieval's embedding model) the sentences of other sections the dense search
    ranks highest that BM25 did not pick: what a question in everyday words meets in serving.
    """
    from services.retrieval.lexical import LexicalIndex

    located = [(s, x) for s in sections for x in s.sentences]
    index = LexicalIndex([f"{s.title}\n{x}" for s, x in located])
    vectors = None
    if dense_negatives:
        vectors = encoder.encode([f"{s.title}: {x}" for s, x in located])
    for row in questions:
        question = str(row["question"]).strip()
        group = f"ipc_plain:{row['id']}"
        gold_docs = set(row.get("gold_doc_ids") or ())  # type: ignore[call-overload]
        keys = [_norm(str(k)) for k in row.get("key_sentences") or ()]  # type: ignore[attr-defined]
        if row.get("answerable"):
            positives = [
                x
                for s, x in located
                if s.doc_id in gold_docs and any(_norm(x) in k or k in _norm(x) for k in keys)
            ]
            if not positives:
                raise ValueError(f"{row['id']}: no sentence of {sorted(gold_docs)} matches its key")
            for x in positives:
                yield pair(x, question, ANSWERS, "ipc_plain_answer", group)
        _, positions, _ = index.search(question, negatives + 12)
        picked = [
            located[int(i)][1] for i in positions if located[int(i)][0].doc_id not in gold_docs
        ][:negatives]
        if vectors is not None:
            (query,) = encoder.encode([question])
            ranked = np.argsort(-(vectors @ query))
            dense = [
                located[int(i)][1]
                for i in ranked[: dense_negatives + len(picked) + 12]
                if located[int(i)][0].doc_id not in gold_docs and located[int(i)][1] not in picked
            ]
            picked += dense[:dense_negatives]
        source = "ipc_plain_other_section" if row.get("answerable") else "ipc_plain_unanswerable"
        for x in picked:
            yield pair(x, question, NOT_ANSWERS, source, group)


VENDORED = Path("training/data/answerability/manifest.json")


def vendored_source_note(manifest: dict[str, object], vendored: Path = VENDORED) -> str:
    """A warning when this plain mix is not the one the vendored mix was derived from (its
    ``derived_from.files``): ``add_statute_headings`` would then refuse to replace it."""
    if not vendored.exists():
        return ""
    derived = json.loads(vendored.read_text()).get("derived_from", {}).get("files")
    if derived is None or derived == manifest["files"]:
        return ""
    files = manifest["files"]
    assert isinstance(files, dict)
    changed = ", ".join(
        f"{name} {str(sha)[:8]}… (the vendored mix's: {str(derived.get(name))[:8]}…)"
        for name, sha in sorted(files.items())
        if derived.get(name) != sha
    )
    return (
        f"note: this plain mix is not the one {vendored.parent} was derived from: {changed}. "
        "training.add_statute_headings will not replace the vendored mix without --force; "
        f"{vendored.parent / 'SOURCE.md'} says how to rebuild the vendored one."
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=Path("../shared/data/train"))
    parser.add_argument("--corpus", type=Path, default=Path("data/corpora/indian_law/ipc.json"))
    parser.add_argument("--out", type=Path, default=Path("var/train/data/answerability_plain"))
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument(
        "--ipc-questions",
        type=Path,
        nargs="*",
        default=[
            Path("training/sources/ipc_plain_questions_v1.jsonl"),
            Path("training/sources/ipc_plain_questions_v2.jsonl"),
            Path("training/sources/ipc_plain_questions_v3.jsonl"),
        ],
        help="hand-written plain-language IPC question files (none given: none, as in v1's "
        "mix; v2's mix: only ipc_plain_questions_v1.jsonl; v3's: v1 and v2)",
    )
    parser.add_argument("--ipc-question-repeats", type=int, default=3)
    parser.add_argument(
        "--dense-negatives",
        type=int,
        default=0,
        help="per plain question, this many more negatives from retrieval's dense search "
        "(0, every shipped mix so far: BM25's 3 only)",
    )
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    from training.build_data import ipc_sections

    sections = ipc_sections(args.corpus)

    rows = [
        *squad_pairs(args.shared / "squad2" / "train_subset.json", rng),
        *hotpot_pairs(
            read_jsonl(args.shared / "hotpotqa" / "train_rpt_devsample.jsonl"),
            read_jsonl(args.shared / "hotpotqa" / "train_evidence_only_ecm.jsonl"),
        ),
        *ipc_pairs(sections, rng),
    ]
    encoder = None
    if args.dense_negatives:
        from services.retrieval.embedding import load_encoder

        encoder = load_encoder()
    for questions in (q for q in args.ipc_questions if q.name):  # '' (v1's mix): none
        plain = list(
            ipc_question_pairs(
                read_jsonl(questions),
                sections,
                dense_negatives=args.dense_negatives,
                encoder=encoder,
            )
        )
        rows += plain  # de-duplicated below like every source, then repeated
    rows = list({(r["premise"], r["hypothesis"]): r for r in rows}.values())  # first label wins
    train = [r for r in rows if not held_back(r["group"])]
    heldback = [r for r in rows if held_back(r["group"])]
    if args.ipc_question_repeats > 1:  # training pairs only: the held-back set counts each once
        extra = [r for r in train if r["source"].startswith("ipc_plain")]
        train += extra * (args.ipc_question_repeats - 1)
    rng.shuffle(train)
    manifest = write_mix(args.out, train, heldback, args.seed, labels=(ANSWERS, NOT_ANSWERS))
    print(json.dumps(manifest, indent=2))
    note = vendored_source_note(manifest)
    if note:
        print(note, file=sys.stderr)


if __name__ == "__main__":
    main()
