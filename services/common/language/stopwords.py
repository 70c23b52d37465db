"""Stop words: one base of English function words, with named extensions per use.

Every module that ignores words ignores them from here (issue 14), so the lists cannot drift
apart unnoticed; each use names the extensions it adds and why:

- ``FUNCTION_WORDS``: articles, pronouns, auxiliaries, prepositions, conjunctions, and their
  contractions ("didn't", "he'll": they carry no checkable fact and no topic).
- ``STATUTE_CONNECTIVES``: modal verbs and the reference and connective vocabulary of statutes
  and model answers ("shall", "thereof", "aforesaid", "section"); with the base, the
  validator's list. Negation words are function words ("not", "never"); the negation module
  reads them from its own list.
- ``NUMBER_WORDS``: spelled-out numbers (the quantities parser reads them as numbers).
- ``REQUEST_WORDS``: what a question says about the answer it wants rather than about its topic
  ("explain", "tell", "details", "regarding"); with the base, the list sufficiency reads
  questions with.

Retrieval's BM25 keeps bm25s's own English list (``services.retrieval.lexical``), a subset of the
base: changing it changes the index (its tokenizer version).
"""

from __future__ import annotations

from typing import Final


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_BASE_FUNCTION_WORDS: Final = _words(
    """
    a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    either few for from further had has have having he her here hers herself him himself his
    how however i if in into is it its itself just me might more most must my myself no nor
    not of off on once only or other ought our ours ourselves out over own per same shall
    she should so some such than that the their theirs them themselves then there these they
    this those through thus to too under until up upon very was we were what whatever when
    where whether which while who whom why will with within without would yet you your yours
    yourself yourselves
    """
)
# Negation words beside "not", "no" and "nor" (Then AE); the negation module reads its own.
_NEGATION_WORDS: Final = _words("cannot neither never nobody none nothing")
# Contractions of the words above ("didn't" is "did not"): function words, as their parts are.
_CONTRACTIONS: Final = _words(
    """
    aren't can't couldn't didn't doesn't don't hadn't hasn't haven't he'd he'll he's here's
    how's i'd i'll i'm i've isn't it's let's mustn't shan't she'd she'll she's shouldn't
    that's there's they'd they'll they're they've wasn't we'd we'll we're we've weren't
    what's when's where's who's why's won't wouldn't you'd you'll you're you've
    """
)
FUNCTION_WORDS: Final = _BASE_FUNCTION_WORDS | _NEGATION_WORDS | _CONTRACTIONS
STATUTE_CONNECTIVES: Final = _words(
    """
    additionally aforesaid art article articles cent clause clauses e e.g eg etc even
    furthermore g hence hereby herein hereinafter hereof hereunder i.e ie may moreover
    namely percent said sec secs section sections sub subsection thereby therefor therefore
    therein thereof thereto unless viz whichever whoever whosoever
    """
)
NUMBER_WORDS: Final = _words(
    """
    billion crore crores eight eighteen eighty eleven fifteen fifty five forty four fourteen
    hundred lakh lakhs million nine nineteen ninety one seven seventeen seventy six sixteen
    sixty ten thirteen thirty thousand three twelve twenty two zero
    """
)
REQUEST_WORDS: Final = _words(
    """
    according actually address addresses anybody anyone anything concern concerns
    consequence consequences consider considered content contents context cover covered
    covers deal deals describe described describes detail details discuss discusses else
    entail entails ever every explain found get gets getting give got gotten happen happened
    happens kind list mention mentioned mentions now pertain pertains please possible
    provide provided provides really refer referred refers regarding relate related relates
    say says scenario situation somebody someone something specified specifies specify state
    stated states talk tell text type us via way ways whose
    """
)
