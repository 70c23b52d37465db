"""Rule-generated statute-style NLI pairs from a corpus of sections (training data only).

Why: general NLI data (SNLI/MNLI/FEVER) never shows a model that "may extend to seven years"
is contradicted by "not less than seven years", or that "simple" and "rigorous" imprisonment
differ. These pairs teach that, with the corpus's own penalty sentences as premises.

Every claim here is made by a rewrite rule, so the model's accuracy on rule-made claims says
little: the validator is evaluated on a hand-written set (data/eval/ipc_adversarial/) that no
rule below produced.

Labels: ``entailment`` (verbatim, rephrased or partial restatements), ``contradiction`` (one
meaning-changing edit: bound direction, term, simple/rigorous, or/and, penalty kind, role
swap, antonym, exact term), ``neutral`` (another section's penalty, a penalty the premise
does not state, a definition sentence paired with a penalty claim).
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

NUMBER_WORDS = (
    "one", "two", "three", "four", "five", "six", "seven", "ten", "fourteen", "twenty",
)  # fmt: skip
_PUNISHED = re.compile(r"\bshall be punished\b")
_MAY_EXTEND = re.compile(r"for a term which may extend to (\w+) (years?|months?)")
_TITLE_PREFIX = re.compile(r"^(punishment for|punishment of)\s+", re.IGNORECASE)

ROLE_PAIRS = (
    ("public servant", "private person"),
    ("woman", "man"),
    ("husband", "wife"),
    ("master", "servant"),
    ("owner", "thief"),
    ("Court of Justice", "police officer"),
    ("offender", "victim"),
    ("minor", "adult"),
    ("Government", "private company"),
)
ANTONYMS = (
    ("voluntarily", "involuntarily"),
    ("intentionally", "accidentally"),
    ("knowingly", "unknowingly"),
    ("dishonestly", "honestly"),
    ("fraudulently", "in good faith"),
    ("without the consent", "with the consent"),
    ("without lawful excuse", "with lawful excuse"),
    ("movable", "immovable"),
    ("by night", "by day"),
    ("false", "true"),
    ("public", "private"),
    ("less than", "more than"),
    ("under the age of", "over the age of"),
    ("above", "below"),
    ("rash", "careful"),
    ("negligent", "careful"),
    ("unlawful", "lawful"),
    ("secretly", "openly"),
)
_PUNISHABLE = (
    "is punishable with",
    "can be punished with",
    "may be punished with",
    "is liable to be punished with",
    "carries a punishment of",
)


@dataclass(frozen=True, slots=True)
class Section:
    """A section: its id (``IPC_420``), title and sentences."""

    doc_id: str
    title: str
    sentences: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Pair:
    """One premise/hypothesis pair with its label and the rule that made it."""

    premise: str
    hypothesis: str
    label: str
    source: str


def offence_phrase(title: str) -> str:
    """The offence a section title names, for "The punishment for X is ..." claims."""
    phrase = _TITLE_PREFIX.sub("", title.strip().rstrip("."))
    return phrase[:1].lower() + phrase[1:]


def penalty_clause(sentence: str) -> str | None:
    """The words after the (last) "shall be punished" of a sentence, or None."""
    found = list(_PUNISHED.finditer(sentence))
    if not found:
        return None
    clause = sentence[found[-1].end() :].strip().rstrip(".;:")
    return clause if clause.startswith("with") and len(clause) < 400 else None


def soften(clause: str, rng: random.Random) -> str:
    """Rephrase a penalty clause without changing what it says."""
    out = clause
    if rng.random() < 0.7:
        out = _MAY_EXTEND.sub(
            lambda m: rng.choice(
                (
                    f"for up to {m.group(1)} {m.group(2)}",
                    f"of up to {m.group(1)} {m.group(2)}",
                    f"for a term not exceeding {m.group(1)} {m.group(2)}",
                    f"for a maximum of {m.group(1)} {m.group(2)}",
                )
            ),
            out,
        )
    if rng.random() < 0.5:
        out = out.replace("and shall also be liable to fine", "and is also liable to a fine")
        out = out.replace(
            "or with fine, or with both", rng.choice(("or a fine, or both", "or with fine or both"))
        )
    return out


def _swap_once(text: str, a: str, b: str) -> str | None:
    pattern = re.compile(r"\b" + re.escape(a) + r"\b")
    if not pattern.search(text):
        return None
    return pattern.sub(b, text, count=1)


def contradictions(sentence: str, rng: random.Random) -> Iterator[tuple[str, str]]:
    """(hypothesis, rule) pairs that contradict ``sentence`` by one edit each."""
    if m := _MAY_EXTEND.search(sentence):
        n, unit = m.group(1), m.group(2)
        yield (
            sentence.replace(m.group(0), f"for a term which shall not be less than {n} {unit}"),
            "bound_min",
        )
        yield sentence.replace(m.group(0), f"for a term of exactly {n} {unit}"), "bound_exact"
        other = rng.choice([w for w in NUMBER_WORDS if w != n])
        yield sentence.replace(m.group(0), m.group(0).replace(f" {n} ", f" {other} ")), "term"
    for x, y in (("simple", "rigorous"), ("rigorous", "simple")):
        if (s := _swap_once(sentence, f"{x} imprisonment", f"{y} imprisonment")) is not None:
            yield s, "simple_rigorous"
    if "or with fine, or with both" in sentence:
        yield sentence.replace("or with fine, or with both", "and with fine"), "or_and"
        yield sentence.replace("or with fine, or with both", "and shall also be fined"), "or_and"
    if "and shall also be liable to fine" in sentence:
        yield sentence.replace("and shall also be liable to fine", "or with fine instead"), "and_or"
    if "death" in sentence:
        yield sentence.replace("death", "imprisonment for a term of two years", 1), "kind"
    else:
        s = _swap_once(sentence, "imprisonment for life", "death") or _swap_once(
            sentence, "imprisonment of either description", "death"
        )
        if s is not None:
            yield s, "kind"
    for a, b in ROLE_PAIRS:
        if (s := _swap_once(sentence, a, b)) is not None:
            yield s, "role"
            break
    antonyms = list(ANTONYMS)
    rng.shuffle(antonyms)
    for a, b in antonyms:
        s = _swap_once(sentence, a, b) or _swap_once(sentence, b, a)
        if s is not None:
            yield s, "antonym"
            break


def _claims_about(section: Section, clause: str, rng: random.Random) -> list[str]:
    offence = offence_phrase(section.title)
    soft = soften(clause, rng)
    claims = [
        f"The punishment for {offence} is {soft[len('with ') :]}.",
        f"{offence[:1].upper() + offence[1:]} {rng.choice(_PUNISHABLE)} {soft[len('with ') :]}.",
    ]
    if m := _MAY_EXTEND.search(clause):
        claims.append(
            f"{offence[:1].upper() + offence[1:]} can lead to imprisonment of up to "
            f"{m.group(1)} {m.group(2)}."
        )
    return claims


def generate(sections: Sequence[Section], seed: int, per_section: int = 24) -> list[Pair]:
    """Entailment, contradiction and neutral pairs over ``sections``, deterministic for a seed."""
    rng = random.Random(seed)
    with_penalty = [
        (s, sent, clause)
        for s in sections
        for sent in s.sentences
        if (clause := penalty_clause(sent)) is not None
    ]
    pairs: list[Pair] = []

    def add(premise: str, hypothesis: str, label: str, rule: str) -> None:
        pairs.append(Pair(premise, hypothesis, label, f"ipc_rules:{rule}"))

    for section, sentence, clause in with_penalty:
        bucket: list[Pair] = []
        if rng.random() < 0.3:
            bucket.append(Pair(sentence, sentence, "entailment", "ipc_rules:verbatim"))
        twice = [*_claims_about(section, clause, rng), *_claims_about(section, clause, rng)]
        for claim in dict.fromkeys(twice):  # deduplicated in order (a set's order is not fixed)
            bucket.append(Pair(sentence, claim, "entailment", "ipc_rules:paraphrase"))
        # Contradictions of the whole sentence and of a short claim (what answers look like).
        short = f"The punishment for {offence_phrase(section.title)} is {clause[len('with ') :]}."
        for hyp, rule in contradictions(short, rng):
            bucket.append(Pair(sentence, hyp, "contradiction", f"ipc_rules:{rule}"))
        for hyp, rule in contradictions(sentence, rng):
            if rng.random() < 0.4:
                bucket.append(Pair(sentence, hyp, "contradiction", f"ipc_rules:{rule}"))
        # A penalty claim judged against another section's penalty: related, not supported.
        for other, other_sentence, other_clause in rng.sample(
            with_penalty, min(3, len(with_penalty))
        ):
            if other.doc_id != section.doc_id and other_clause != clause:
                claim = rng.choice(_claims_about(section, clause, rng))
                bucket.append(Pair(other_sentence, claim, "neutral", "ipc_rules:other"))
        # A definition sentence of the same section says nothing of the penalty.
        defs = [x for x in section.sentences if penalty_clause(x) is None and len(x) > 40]
        if defs:
            claim = rng.choice(_claims_about(section, clause, rng))
            bucket.append(Pair(rng.choice(defs), claim, "neutral", "ipc_rules:definition"))
        if "fine" not in clause:
            bucket.append(
                Pair(
                    sentence,
                    f"{offence_phrase(section.title).capitalize()} is also punishable with a fine "
                    "of up to ten thousand rupees.",
                    "neutral",
                    "ipc_rules:extra",
                )
            )
        rng.shuffle(bucket)
        pairs.extend(bucket[:per_section])
    # Definition sentences: faithful rewordings and one-edit contradictions.
    for section in sections:
        for sentence in section.sentences:
            if penalty_clause(sentence) is not None or len(sentence.split()) < 8:
                continue
            if sentence.startswith("Whoever "):
                add(
                    sentence,
                    "Any person who " + sentence[len("Whoever ") :],
                    "entailment",
                    "reword",
                )
            for hyp, rule in contradictions(sentence, rng):
                if rule in {"role", "antonym"}:
                    add(sentence, hyp, "contradiction", rule)
    return pairs
