"""Sanity checks for the hand-written plain-language IPC questions in training/sources/.

Run from the repository root:
    .venv/bin/python training/sources/check_ipc_plain_questions.py            # every shipped file
    .venv/bin/python training/sources/check_ipc_plain_questions.py FILE --prefix part3

Checks, per file: valid JSON per line, required fields, ids ``<prefix>-001``... unique and in
order (``train`` for v1, ``more`` for v2, ``third`` and ``fourth`` for v3 and v4, ``--prefix``
for a file given by name), gold doc ids exist in the IPC corpus, key sentences are verbatim
substrings of their gold sections (after collapsing whitespace), answer strings occur in the
key sentences, answerable/unanswerable field rules; and no duplicate question within or
across the files checked, or with data/golden/ipc_plain_tune_v1.jsonl. Exits non-zero if any
problem is found.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "training" / "sources"
# Each shipped file and the prefix of its ids.
FILES = {
    SOURCES / "ipc_plain_questions_v1.jsonl": "train",
    SOURCES / "ipc_plain_questions_v2.jsonl": "more",
    SOURCES / "ipc_plain_questions_v3.jsonl": "third",
    SOURCES / "ipc_plain_questions_v4.jsonl": "fourth",
}
# Repeats already in a shipped model's training mix, kept so the mix rebuilds byte for byte
# (v3 was not checked against v2 before answerability v6 was trained on it).
KNOWN_REPEATS = {"third-237"}  # "How much GST is charged on lottery tickets?" = more-174
CORPUS = ROOT / "data" / "corpora" / "indian_law" / "ipc.json"
TUNE = ROOT / "data" / "golden" / "ipc_plain_tune_v1.jsonl"

FIELDS = [
    "id",
    "question",
    "answerable",
    "intent",
    "gold_doc_ids",
    "key_sentences",
    "answer_contains",
    "rationale",
]
INTENTS = {"punishment", "definition", "scope", "procedure", "exception", "other"}
SECTION_REF = re.compile(r"\b(section|sec\.|s\.)\s*\d", re.IGNORECASE)


def norm(text: str) -> str:
    return " ".join(text.split())


def qkey(text: str) -> str:
    return norm(text).casefold()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Check hand-written plain IPC questions.")
    parser.add_argument("files", nargs="*", type=Path, help="default: every shipped file")
    parser.add_argument("--prefix", default=None, help="id prefix of the files given")
    args = parser.parse_args(argv)
    files = (
        {f: args.prefix or FILES.get(f.resolve(), "train") for f in args.files}
        if args.files
        else {f: prefix for f, prefix in FILES.items() if f.exists()}
    )
    corpus = {
        f"IPC_{row['Section']}": norm(row["section_desc"])
        for row in json.loads(CORPUS.read_text(encoding="utf-8"))
    }
    tune_rows = [json.loads(x) for x in TUNE.read_text(encoding="utf-8").splitlines() if x.strip()]
    tune_questions = {qkey(r["question"]) for r in tune_rows}
    tune_sections = {g for r in tune_rows for g in r.get("gold_doc_ids", [])}

    problems: list[str] = []
    rows = []
    for data, prefix in files.items():
        for idx, (n, line) in enumerate(
            enumerate(data.read_text(encoding="utf-8").splitlines(), 1), 1
        ):
            if not line.strip():
                problems.append(f"{data.name} line {n}: blank line")
                continue
            try:
                rows.append((f"{data.name} line {n}", f"{prefix}-{idx:03d}", json.loads(line)))
            except json.JSONDecodeError as exc:
                problems.append(f"{data.name} line {n}: invalid JSON ({exc})")

    seen_q: dict[str, str] = {}
    for line, expected_id, r in rows:
        where = f"{line} ({r.get('id')})"
        missing = [f for f in FIELDS if f not in r]
        if missing:
            problems.append(f"{where}: missing fields {missing}")
            continue
        if r["id"] != expected_id:
            problems.append(f"{where}: expected id {expected_id}")
        if r["intent"] not in INTENTS:
            problems.append(f"{where}: unknown intent {r['intent']!r}")
        if not isinstance(r["answerable"], bool):
            problems.append(f"{where}: answerable must be a boolean")
        q = qkey(r["question"])
        if not q:
            problems.append(f"{where}: empty question")
        if q in seen_q and r["id"] not in KNOWN_REPEATS:
            problems.append(f"{where}: duplicate of {seen_q[q]}")
        seen_q[q] = r["id"]
        if q in tune_questions:
            problems.append(f"{where}: question duplicates one in ipc_plain_tune_v1.jsonl")
        if not str(r["rationale"]).strip():
            problems.append(f"{where}: empty rationale")

        golds, keys, answers = r["gold_doc_ids"], r["key_sentences"], r["answer_contains"]
        if r["answerable"]:
            if not golds:
                problems.append(f"{where}: answerable item without gold_doc_ids")
            if not keys:
                problems.append(f"{where}: answerable item without key_sentences")
            if not (1 <= len(answers) <= 3):
                problems.append(f"{where}: answer_contains should hold 1-3 strings")
            for g in golds:
                if g not in corpus:
                    problems.append(f"{where}: unknown gold doc id {g}")
            gold_texts = [corpus[g] for g in golds if g in corpus]
            for k in keys:
                nk = norm(k)
                if not nk or not any(nk in t for t in gold_texts):
                    problems.append(
                        f"{where}: key sentence not found in gold section(s): {k[:80]!r}"
                    )
            joined = " ".join(norm(k) for k in keys)
            for a in answers:
                if norm(a) not in joined:
                    problems.append(f"{where}: answer string {a!r} not in key sentences")
        else:
            if golds or keys or answers:
                problems.append(f"{where}: unanswerable item must have empty gold/key/answer lists")

    answerable = [r for _, _, r in rows if r.get("answerable") is True]
    unanswerable = [r for _, _, r in rows if r.get("answerable") is False]
    sections = {g for r in answerable for g in r["gold_doc_ids"]}
    chapters = {}
    for row in json.loads(CORPUS.read_text(encoding="utf-8")):
        chapters[f"IPC_{row['Section']}"] = row["chapter"]
    section_refs = sum(1 for _, _, r in rows if SECTION_REF.search(r["question"]))

    print(f"files: {', '.join(f.name for f in files)}")
    print(f"items: {len(rows)}")
    print(f"answerable: {len(answerable)}")
    print(f"unanswerable: {len(unanswerable)}")
    print(f"distinct gold sections: {len(sections)}")
    print(f"gold sections also in tune set: {len(sections & tune_sections)}")
    print(f"gold sections not in tune set: {len(sections - tune_sections)}")
    print(
        f"chapters covered: {len({chapters[s] for s in sections if s in chapters})}"
        f" of {len(set(chapters.values()))}"
    )
    print(f"intents (answerable): {dict(Counter(r['intent'] for r in answerable))}")
    print(f"intents (unanswerable): {dict(Counter(r['intent'] for r in unanswerable))}")
    print(
        f"questions mentioning a section number: {section_refs}"
        f" ({100.0 * section_refs / max(len(rows), 1):.1f}%)"
    )
    if problems:
        print(f"\n{len(problems)} problem(s):")
        for p in problems:
            print("  " + p)
        return 1
    print("\nall checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
