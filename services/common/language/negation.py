"""Negation cues and their scopes, and the check that a claim and its evidence agree on them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import filterfalse, pairwise
from operator import attrgetter

from services.common.language.stopwords import NUMBER_WORDS
from services.common.language.text import (
    Clause,
    Phrases,
    Token,
    phrase_at,
    phrase_index,
    surface,
    term_of,
    word_list,
)

CUES = frozenset(
    word_list("not no never nothing none neither nor without cannot nobody nowhere noone")
)
# "not only X but also Y" asserts X; "whether or not" asserts nothing either way.
_NOT_NEGATION: tuple[tuple[str, ...], ...] = (("not", "only"), ("nothing", "but"))
_AFTER_OR = frozenset({"whether", "if"})
# Cues of two words: "otherwise than on provocation" = "without provocation"; "ceases to be
# stolen property" = "is no longer stolen property".
_PHRASE_CUES: frozenset[tuple[str, str]] = frozenset(
    {("otherwise", "than"), ("ceases", "to"), ("cease", "to"), ("ceased", "to")}
)
# Words of which a text must hold one to have any negation scope at all (a fast path).
TRIGGERS = CUES | {first for first, _ in _PHRASE_CUES}
# Bounds: "not less than seven years" negates only the comparison, so its scope is just the
# comparative word ("at least seven years" agrees with it, "less than seven years" does not).
_BOUNDS: dict[tuple[str, ...], str] = {
    ("less", "than"): "less",
    ("more", "than"): "more",
    ("fewer", "than"): "fewer",
    ("later", "than"): "later",
    ("earlier", "than"): "earlier",
    ("exceeding",): "exceed",
    ("to", "exceed"): "exceed",
    ("longer", "than"): "longer",
    ("shorter", "than"): "shorter",
    ("greater", "than"): "greater",
}
# Which way each comparative bounds: "not more than" and "not exceeding" set a maximum, "not
# less than" a minimum.
_UPPER = frozenset({"more", "exceed", "longer", "greater", "later"})
_DIRECTION: dict[str, str] = {c: ("upper" if c in _UPPER else "lower") for c in _BOUNDS.values()}
# The words that state each comparative: the claim's words are compared as written, so the bound
# "not exceeding" fails a claim saying "exceeding" (or "exceeds") without negation.
_BOUND_FORMS: dict[str, frozenset[str]] = {c: frozenset({c}) for c in _BOUNDS.values()} | {
    "exceed": frozenset(word_list("exceed exceeds exceeded exceeding"))
}
SCOPE_TERMS = 3
# A local edit (see ``edits``) is judged on the words right around a cue: this many on each
# side, and at least ``_EDIT_MIN_CONTEXT`` in all, so that a coincidence rarely matches.
_EDIT_CONTEXT = 2
_EDIT_MIN_CONTEXT = 3
# Words that say what the cue they replace says ("no deaths" = "zero deaths").
_NEGATIVE_WORDS = frozenset(word_list("zero 0 nil"))
_NORM = attrgetter("norm")


@dataclass(frozen=True, slots=True)
class NegationScope:
    """A negation cue and the terms it governs: up to three content terms after it, in its
    clause (or the next clause when the cue ends one: "shall not, if ..., be punished")."""

    cue: str
    start: int
    end: int
    terms: tuple[str, ...]
    bound: bool = False
    # The words right before and after the cue, digits left out (see ``edits``).
    before: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    # The scan stopped at its token bound before any term: what the cue negates is unread.
    cut: bool = False
    # The words from the cue to its last term, lower-cased ("never be punished with
    # imprisonment"), and each term as written ("punished" for "punish"): what messages quote.
    text: str = ""
    words: tuple[str, ...] = ()


def is_cue(tokens: Sequence[Token], i: int) -> bool:
    """True when token ``i`` negates what follows it."""
    norm = tokens[i].norm
    if i + 1 < len(tokens) and (norm, tokens[i + 1].norm) in _PHRASE_CUES:
        return True
    if not (norm in CUES or norm.endswith("n't")):
        return False
    if (
        norm == "without"
        and i >= 2
        and (tokens[i - 2].norm, tokens[i - 1].norm) == ("within", "or")
    ):
        return False  # "within or without India": inside or outside it
    following = tuple(t.norm for t in tokens[i : i + 3])
    if any(following[: len(phrase)] == phrase for phrase in _NOT_NEGATION):
        return False
    nxt = tokens[i + 1].norm if i + 1 < len(tokens) else ""
    if norm == "no" and nxt[:1].isdigit():
        return False  # "No. 45" is a number sign
    return not (
        norm == "not" and i >= 2 and tokens[i - 1].norm == "or" and tokens[i - 2].norm in _AFTER_OR
    )


# Stop words, punctuation and cues between a scope's terms: ample for any sentence read so far,
# and a bound on the scan.
_SCOPE_TOKENS_PER_TERM = 8


def scopes(
    tokens: Sequence[Token], width: int = SCOPE_TERMS
) -> tuple[tuple[NegationScope, ...], frozenset[int]]:
    """Every negation cue with the terms it governs, and the indices of the negated tokens.

    Numbers in a scope count as ``#<digits>`` so that "was not 2.77" still has a scope.
    """
    found: list[NegationScope] = []
    negated: set[int] = set()
    for i, token in enumerate(tokens):
        phrase = i + 1 < len(tokens) and (token.norm, tokens[i + 1].norm) in _PHRASE_CUES
        if (token.term and not phrase) or not is_cue(tokens, i):
            continue
        bound, stop = _bound(tokens, i)
        if bound:
            negated.add(i + 1)
            found.append(
                NegationScope(
                    token.norm,
                    token.start,
                    token.end,
                    (bound,),
                    True,
                    *_context(tokens, i),
                    text=_written(tokens, i, stop),
                    words=tuple(t.norm for t in tokens[i:stop] if t.norm in _BOUND_FORMS[bound]),
                )
            )
            continue
        terms: list[str] = []
        last = i
        clause = token.clause
        jumped = False
        # A scope reads at most _SCOPE_TOKENS_PER_TERM tokens per term it may hold: a cue
        # followed by no term (a 64 KiB answer of "no no no ...") once made every cue scan to
        # the end of the text, quadratic: 27 s for one request.
        # A scope cut there before it found any term is kept as unread (``cut``): in a claim it
        # fails the sentence rather than pass as a negation of nothing (``mismatches``).
        limit = min(len(tokens), i + 1 + width * _SCOPE_TOKENS_PER_TERM)
        cut = False
        for j in range(i + 1, limit):
            follower = tokens[j]
            if follower.clause != clause:
                if terms or jumped:
                    break
                clause, jumped = follower.clause, True
            if len(terms) >= width:
                break
            number = follower.norm.isdigit() or follower.norm in NUMBER_WORDS
            term = follower.term or ("#" + follower.norm if number else "")
            if term:
                negated.add(j)
                last = j
                if term not in terms:
                    terms.append(term)
        else:
            cut = not terms and limit < len(tokens)
        found.append(
            NegationScope(
                token.norm,
                token.start,
                token.end,
                tuple(terms),
                False,
                *_context(tokens, i),
                cut=cut,
                text=_written(tokens, i, last + 1),
                words=tuple(surface(tokens[i + 1 : last + 1], terms)),
            )
        )
    return tuple(found), frozenset(negated)


def _written(tokens: Sequence[Token], start: int, stop: int) -> str:
    return " ".join(t.norm for t in tokens[start:stop])


def _bound(tokens: Sequence[Token], i: int) -> tuple[str, int]:
    """The comparative a negated bound states ("not be less than": "less") and the index after
    its last word; ("", 0) when token ``i`` opens none."""
    if tokens[i].norm not in ("not", "no"):
        return "", 0
    # The statutes' usual form puts "be" between: "shall not be less than seven years".
    first = i + 2 if i + 1 < len(tokens) and tokens[i + 1].norm == "be" else i + 1
    for phrase, comparative in _BOUNDS.items():
        if tuple(t.norm for t in tokens[first : first + len(phrase)]) == phrase:
            return comparative, first + len(phrase)
    return "", 0


def mismatches(
    claim_scopes: Sequence[NegationScope],
    claim_clauses: Sequence[Clause],
    claim_words: frozenset[str],
    evidence_scopes: Iterable[NegationScope],
    evidence_clauses: Sequence[Clause],
    *,
    evidence_words: frozenset[str],
    evidence_implicit: frozenset[str],
    claim_implicit: frozenset[str],
) -> list[str]:
    """Human-readable negation disagreements between a claim and its cited evidence.

    Forward: each claim negation must share a scope term with some evidence negation.
    Reverse: when the evidence negates a term that a claim clause states without negation, the
    claim clause is aligned with the evidence clauses holding that term (most shared terms); it
    fails when the best-aligned one negates the term ("X is not punishable" vs "X is punishable"),
    and passes when a clause stating it positively aligns at least as well. A negated bound
    ("not less than") fails a claim that uses the comparative word without negation.

    A negated bound in the claim ("no more than 14 years") needs no negation in the evidence,
    only no bound the other way (``_bound_backed``): "not exceeding fourteen years" and "may
    extend to fourteen years" say the same. Words that negate without a cue back a negation
    on the other side (``implicit_terms``): ``evidence_implicit`` holds the terms such words
    govern in the evidence ("other than a human being" backs "not a human being"),
    ``claim_implicit`` those in the claim ("in default of payment" against "not paying").
    ``evidence_words`` are the evidence's word norms.
    """
    evidence_list = list(evidence_scopes)
    problems: list[str] = []
    claim_negated = {term for scope in claim_scopes for term in scope.terms}
    for scope in claim_scopes:
        if scope.cut:
            problems.append(
                f"claim says '{scope.cue}' but no word it negates follows within "
                f"{SCOPE_TERMS * _SCOPE_TOKENS_PER_TERM} words, so the negation cannot be checked"
            )
            continue
        if scope.bound and _bound_backed(scope.terms[0], evidence_list, evidence_words):
            continue
        if (
            scope.terms
            and not any(set(scope.terms).intersection(e.terms) for e in evidence_list)
            and evidence_implicit.isdisjoint(scope.terms)
        ):
            problems.append(
                f"claim says '{scope.text}' but the cited evidence has no matching negation"
            )
    reported: set[str] = set()
    for scope in evidence_list:
        if scope.bound:
            stated = {
                t for t in scope.terms if not _BOUND_FORMS[t].isdisjoint(claim_words)
            } - claim_negated
        else:
            stated = {
                t
                for t in scope.terms
                if t not in claim_negated
                and _aligned_with_negation(t, claim_clauses, evidence_clauses)
            }
        stated -= reported
        if not scope.bound:
            stated -= claim_implicit
        if stated:
            reported |= stated
            written = dict(zip(scope.terms, scope.words, strict=False))
            problems.append(
                f"evidence says '{scope.text}' but the claim states "
                f"{', '.join(written.get(t, t) for t in sorted(stated))} without negation"
            )
    return problems


def _bound_backed(
    comparative: str, evidence: Sequence[NegationScope], evidence_words: frozenset[str]
) -> bool:
    """A claim's negated bound ("no more than") agrees with evidence that bounds the same way
    in any words ("not exceeding", "may extend to"): it disagrees only with an evidence bound
    the other way ("not less than") or the comparative stated without negation ("more than")."""
    direction = _DIRECTION[comparative]
    bounds = [e for e in evidence if e.bound]
    if any(_DIRECTION[e.terms[0]] == direction for e in bounds):
        return True
    if any(_DIRECTION[e.terms[0]] != direction for e in bounds):
        return False
    return _BOUND_FORMS.get(comparative, frozenset({comparative})).isdisjoint(evidence_words)


# Words that negate without a negation cue: "other than a human being" = "not a human being",
# "in default of payment" = "not paying", "incapable of knowing" = "cannot know", "forbids to
# trade" = "bound not to trade". "other", "rather" and "instead" only in "other than", "rather
# than", "instead of" ("any other person" negates nothing).
IMPLICIT = frozenset(
    word_list(
        "except excepting unless default incapable unable lack lacks lacking lacked fail fails "
        "failed failing failure absence absent omit omits omitted omitting omission devoid "
        "forbid forbids forbidden forbidding prohibit prohibits prohibited prohibiting barred bars"
    )
)
_IMPLICIT_PAIRS = frozenset({("other", "than"), ("rather", "than"), ("instead", "of")})


def implicit_terms(tokens: Sequence[Token], width: int = SCOPE_TERMS) -> frozenset[str]:
    """The content terms right after each cue-less negating word (up to ``width`` each, in its
    clause), and those before "or not" in "whether X or not"."""
    out = _governed(tokens, IMPLICIT, _IMPLICIT_PAIRS, width)
    for i, token in enumerate(tokens):
        if token.norm == "not" and i >= 2 and tokens[i - 1].norm == "or":
            for back in tokens[max(0, i - 5) : i - 1]:
                if back.term and back.clause == token.clause:
                    out.add(back.term)
    return frozenset(out)


def _governed(
    tokens: Sequence[Token],
    words: frozenset[str],
    pairs: frozenset[tuple[str, str]],
    width: int,
) -> set[str]:
    """The content terms right after each of ``words`` or each two-word opener of ``pairs``
    (up to ``width`` each, in its clause)."""
    out: set[str] = set()
    for i, token in enumerate(tokens):
        pair = i + 1 < len(tokens) and (token.norm, tokens[i + 1].norm) in pairs
        if token.norm in words or pair:
            out.update(_terms_after(tokens, i, width))
    return out


def _terms_after(
    tokens: Sequence[Token], i: int, width: int, *, same_clause: bool = True
) -> list[str]:
    """Up to ``width`` content terms after token ``i`` ("than" of "other than" skipped), in its
    clause unless ``same_clause`` is False."""
    terms: list[str] = []
    for follower in tokens[i + 1 :]:
        if len(terms) >= width or (same_clause and follower.clause != tokens[i].clause):
            break
        if follower.term and follower.norm != "than":
            terms.append(follower.term)
    return terms


def _aligned_with_negation(
    term: str, claim_clauses: Sequence[Clause], evidence_clauses: Sequence[Clause]
) -> bool:
    """True when a claim clause stating ``term`` aligns best with a clause negating it.

    Alignment: most shared terms, then the closest relative position in the text.
    """
    for clause in claim_clauses:
        if term not in clause.positive:
            continue

        def fit(e: Clause, clause: Clause = clause) -> tuple[int, float]:
            return len(clause.terms & e.terms), -abs(clause.position - e.position)

        negated = max((fit(e) for e in evidence_clauses if term in e.negated), default=None)
        positive = max((fit(e) for e in evidence_clauses if term in e.positive), default=None)
        if negated is not None and (positive is None or negated > positive):
            return True
    return False


def edits(
    claim_tokens: Sequence[Token],
    claim_scopes: Sequence[NegationScope],
    evidence: Sequence[tuple[Sequence[Token], Sequence[NegationScope]]],
) -> list[str]:
    """Negation cues deleted, swapped for another word, or inserted between claim and evidence.

    For each cue of the cited evidence, the words right around it (stop words included, since
    "there is no ART" and "Faith No More" turn on them) must not appear in the claim with the
    cue deleted ("there is ART") or replaced by a word that is not a cue ("usual care with
    training" for "without training"), unless the evidence itself also writes them so ("shall
    not exceed six months ... shall exceed six months"). The same holds the other way round for
    each claim cue ("is not the Japanese debut EP" against "is the Japanese debut EP") that no
    evidence cue has amid the same words. Digits are left out of the words compared: the
    number check owns them, and a swapped number must not make two contexts look alike. This
    catches edits that the term-based check in ``mismatches`` misses when the negated words are
    stop words or when another cue nearby shares the scope terms.
    """
    if not claim_scopes and not any(scopes for _, scopes in evidence):
        return []
    claim_words = _words(claim_tokens)
    cited: list[tuple[str, ...] | None] = [None] * len(evidence)

    def words_of(k: int) -> tuple[str, ...]:
        # Built on first use: most cited items never need theirs.
        words = cited[k]
        if words is None:
            words = cited[k] = _words(evidence[k][0])
        return words

    problems: list[str] = []
    for _, scopes in evidence:
        for scope in scopes:
            found = _edited(scope.before, scope.after, claim_words)
            if found is not None and not any(
                _holds(words_of(j), found) for j in range(len(evidence))
            ):
                problems.append(
                    f"the claim has '{' '.join(found)}' where the cited evidence has "
                    f"'{_quote(scope)}'"
                )
    # A claim cue amid the very words of an evidence cue is backed there, even where the
    # evidence also writes those words without it ("shall not exceed six months ... shall
    # exceed six months").
    backed = {_key(scope) for _, scopes in evidence for scope in scopes}
    for scope in claim_scopes:
        if _key(scope) in backed:
            continue
        for k in range(len(evidence)):
            found = _edited(scope.before, scope.after, words_of(k))
            if found is not None and not _holds(claim_words, found):
                problems.append(
                    f"the claim has '{_quote(scope)}' where the cited evidence has "
                    f"'{' '.join(found)}'"
                )
                break
    return list(dict.fromkeys(problems))


def _words(tokens: Sequence[Token]) -> tuple[str, ...]:
    """The word norms of a text without bare digits (built at C speed: this runs per request)."""
    return tuple(filterfalse(str.isdigit, map(_NORM, tokens)))


def _context(tokens: Sequence[Token], i: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The words right before and after token ``i`` (``_EDIT_CONTEXT`` each), digits left out."""
    before: list[str] = []
    j = i - 1
    while j >= 0 and len(before) < _EDIT_CONTEXT:
        if not tokens[j].norm.isdigit():
            before.append(tokens[j].norm)
        j -= 1
    after: list[str] = []
    j = i + 1
    while j < len(tokens) and len(after) < _EDIT_CONTEXT:
        if not tokens[j].norm.isdigit():
            after.append(tokens[j].norm)
        j += 1
    return tuple(reversed(before)), tuple(after)


def _edited(
    left: tuple[str, ...], right: tuple[str, ...], other: tuple[str, ...]
) -> tuple[str, ...] | None:
    """The words of ``other`` that repeat ``left`` and ``right`` around a cue, with the cue
    deleted or replaced by one word that is no cue; None when ``other`` holds no such words."""
    if not left or not right or len(left) + len(right) < _EDIT_MIN_CONTEXT:
        return None
    n, m = len(left), len(right)
    for p in _positions(other, left[0], len(other) - n - m + 1):
        if other[p : p + n] != left:
            continue
        if other[p + n : p + n + m] == right:
            return left + right
        word = other[p + n]
        if (
            not _is_cue_word(word)
            and word not in _NEGATIVE_WORDS
            and other[p + n + 1 : p + n + 1 + m] == right
        ):
            return (*left, word, *right)
    return None


def _key(scope: NegationScope) -> tuple[tuple[str, ...], str, tuple[str, ...]]:
    return scope.before, scope.cue, scope.after


def _quote(scope: NegationScope) -> str:
    return " ".join((*scope.before, scope.cue, *scope.after))


def _holds(norms: tuple[str, ...], words: tuple[str, ...]) -> bool:
    k = len(words)
    return any(norms[p : p + k] == words for p in _positions(norms, words[0], len(norms) - k + 1))


def _positions(norms: tuple[str, ...], word: str, stop: int) -> Iterator[int]:
    """Indices below ``stop`` where ``word`` occurs (found at C speed, not word by word)."""
    p = 0
    while p < stop:
        try:
            p = norms.index(word, p, stop)
        except ValueError:
            return
        yield p
        p += 1


def _is_cue_word(norm: str) -> bool:
    return norm in CUES or norm.endswith("n't")


# Antonyms made by a negative prefix ("unlawfully" / "lawfully", "dishonestly" / "honestly").
# "un" + a word of four or more letters is nearly always its negation ("under", "until", "union"
# leave no such word behind); the other prefixes also make ordinary words ("inform", "discharge",
# "impose"), so their base must end like an adjective or adverb.
_UN = "un"
_PREFIXES = ("dis", "in", "im", "il", "ir")
_ADJECTIVAL = ("ly", "ful", "able", "ible", "al", "ous", "ive", "ent", "ant")


def _antonym_base(norm: str) -> str:
    """The word ``norm`` negates by its prefix, or "" when it has no negative prefix."""
    if norm.startswith(_UN) and len(norm) - len(_UN) >= 4 and norm[len(_UN) :].isalpha():
        return norm[len(_UN) :]
    for prefix in _PREFIXES:
        base = norm[len(prefix) :]
        if norm.startswith(prefix) and len(base) >= 4 and base.endswith(_ADJECTIVAL):
            return base
    return ""


def antonyms(claim_tokens: Sequence[Token], evidence: Sequence[Sequence[Token]]) -> list[str]:
    """A word one side negates by a prefix where the other side has the word itself.

    "Whoever unlawfully compels ..." cited for "Whoever lawfully compels ...", or "knowingly"
    for "unknowingly": no negation word is added or removed, so ``mismatches`` and ``edits``
    cannot see it. A side that has both forms disagrees with nothing.
    """
    claim = {t.norm for t in claim_tokens}
    cited = {t.norm for tokens in evidence for t in tokens}
    # A side holding the base word in another form ("differentiate" beside "undifferentiated")
    # has both too.
    claim_terms = {t.term for t in claim_tokens}
    cited_terms = {t.term for tokens in evidence for t in tokens}
    problems: list[str] = []
    for word in sorted(claim - cited):
        base = _antonym_base(word)
        if base and base in cited and term_of(base) not in claim_terms:
            problems.append(f"the claim says '{word}' where the cited evidence says '{base}'")
    for word in sorted(cited - claim):
        base = _antonym_base(word)
        if base and base in claim and term_of(base) not in cited_terms:
            problems.append(f"the claim says '{base}' where the cited evidence says '{word}'")
    return problems


# Words whose antonym keeps every other word of a statute: "the lowest punishment" / "the
# highest punishment". A closed list; checked like the prefix antonyms.
_WORD_ANTONYMS: tuple[tuple[str, str], ...] = (
    ("lowest", "highest"),
    ("minimum", "maximum"),
    ("minimal", "maximal"),
    ("earliest", "latest"),
    ("upwards", "downwards"),
)
# An exclusion turned inclusion: "except land" / "including land", "other than a human being" /
# "a human being included".
_ANTONYM_WORDS = frozenset(word for pair in _WORD_ANTONYMS for word in pair)
_EXCLUDING = frozenset(word_list("except excepting excluding save"))
_INCLUDING = frozenset(word_list("including included includes inclusive"))
_OTHER_THAN = frozenset({("other", "than")})


def lexical_antonyms(
    claim_tokens: Sequence[Token], evidence: Sequence[Sequence[Token]]
) -> list[str]:
    """Word antonyms of ``_WORD_ANTONYMS``, and exclusions the claim makes inclusions
    ("including land" for "except land") or restrictions ("only in the cases excepted" for
    "except in the cases excepted")."""
    claim = {t.norm for t in claim_tokens}
    problems: list[str] = []
    # The claim is read first: most claims hold none of these words, and then the cited text
    # (often much longer) is never scanned.
    if not claim.isdisjoint(_ANTONYM_WORDS):
        cited = {t.norm for tokens in evidence for t in tokens}
        for a, b in _WORD_ANTONYMS:
            for word, other in ((a, b), (b, a)):
                if word in claim and other in cited and word not in cited and other not in claim:
                    problems.append(
                        f"the claim says '{word}' where the cited evidence says '{other}'"
                    )
    if claim.isdisjoint(_INCLUDING) and "only" not in claim:
        return problems
    excluded = _excluded_terms(evidence)
    if excluded and claim.isdisjoint(_EXCLUDING) and _OTHER_THAN.isdisjoint(_pairs(claim_tokens)):
        for i, token in enumerate(claim_tokens):
            if token.norm == "only":
                # "only in the cases excepted" for "except in the cases excepted"
                window = claim_tokens[i + 1 : i + 4]
            elif token.norm in _INCLUDING:
                window = claim_tokens[max(0, i - 4) : i + 5]
            else:
                continue
            hit = sorted({t.term for t in window if t.term} & excluded)
            if hit:
                problems.append(
                    f"the claim says '{token.norm}' {', '.join(surface(window, hit))} where the "
                    "cited evidence excludes it"
                )
                break
    return problems


def _pairs(tokens: Sequence[Token]) -> set[tuple[str, str]]:
    return {(a.norm, b.norm) for a, b in pairwise(tokens)}


def _excluded_terms(evidence: Sequence[Sequence[Token]]) -> frozenset[str]:
    """The content terms right after "except", "excluding", "other than" ... (three, own clause)."""
    return frozenset().union(
        *(_governed(tokens, _EXCLUDING, _OTHER_THAN, SCOPE_TERMS) for tokens in evidence)
    )


# An exception turned round: "shall, unless he proves that he acted without intent to defraud,
# be punished" / "is punished even if he proves that he acted without intent to defraud".
_EXCEPTION_OPENERS: tuple[tuple[str, ...], ...] = (
    ("unless",),
    ("except", "where"),
    ("except", "when"),
    ("except", "if"),
)
_CONCESSIVE_OPENERS: tuple[tuple[str, ...], ...] = (
    ("even", "if"),
    ("even", "though"),
    ("even", "where"),
    ("even", "when"),
    ("regardless", "of", "whether"),
)
_EXCEPTIONS = phrase_index(_EXCEPTION_OPENERS)
_CONCESSIONS = phrase_index(_CONCESSIVE_OPENERS)
_EXCEPTION_TERMS = 4
_EXCEPTION_SHARED = 2


def exceptions_reversed(
    claim_tokens: Sequence[Token], evidence: Sequence[Sequence[Token]]
) -> list[str]:
    """Conditions the cited text makes an exception ("unless P") that the claim makes a
    concession ("even if P"): at least two of the first four content terms shared."""
    conceding = _after(claim_tokens, _CONCESSIONS)
    if not conceding:
        return []  # the usual case: the cited text is never scanned
    excepted = [terms for tokens in evidence for terms in _after(tokens, _EXCEPTIONS)]
    problems: list[str] = []
    for conceded in conceding:
        for terms in excepted:
            shared = [t for t in conceded if t in terms]
            if len(shared) >= _EXCEPTION_SHARED:
                problems.append(
                    f"the claim concedes '{' '.join(surface(claim_tokens, shared))}' where the "
                    "cited evidence makes it an exception ('unless')"
                )
                return problems
    return problems


def _after(tokens: Sequence[Token], openers: Phrases) -> list[tuple[str, ...]]:
    """The first ``_EXCEPTION_TERMS`` content terms after each opener."""
    norms = [t.norm for t in tokens]
    out: list[tuple[str, ...]] = []
    for i in range(len(norms)):
        n = phrase_at(norms, i, openers)
        if n:
            out.append(tuple(_terms_after(tokens, i + n - 1, _EXCEPTION_TERMS, same_clause=False)))
    return out
