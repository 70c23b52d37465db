"""Everyday words for the statute's: what a plain-language question says, and the words the
Indian Penal Code uses for the same thing ("steal" for "theft", "bribe" for "gratification").

Retrieval's BM25 query searches both (``services.retrieval.lexical.query_tokens``): the
statute never says "steal", so a question that does found its section only through the dense
retriever. Written from the plain-language tune set (data/golden/ipc_plain_tune_v1.jsonl), whose
refused answerable questions mostly lacked these words in their gold sections, and from the
answerability model's hand-written training questions; never from the report-only plain set.
Each entry is a synonym the corpus really uses, not a topic ("money" is not "property"), and
words that only ask for a penalty ("jail") are not here: nearly every penalty clause says
"imprisonment", so they would find nothing in particular.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Final

from services.common.language.text import stem, words

# Lay word (any form) -> the statute's words for it.
_LAY: Final[Mapping[str, tuple[str, ...]]] = {
    "steal": ("theft",),
    "stealing": ("theft",),
    "stole": ("theft",),
    "pickpocket": ("theft",),
    "shoplifting": ("theft",),
    "kill": ("death", "murder"),
    "killing": ("death", "murder"),
    "killed": ("death", "murder"),
    "fake": ("counterfeit", "forged", "false"),
    "hit": ("hurt", "assault", "force"),
    "punch": ("hurt", "assault", "force"),
    "slap": ("hurt", "assault", "force"),
    "beat": ("hurt", "assault", "force"),
    "scam": ("cheating",),
    "fraud": ("cheating", "fraudulently"),
    "bribe": ("gratification",),
    "bribery": ("gratification",),
    "drunk": ("intoxication",),
    "mugging": ("robbery",),
    "burglary": ("house-breaking", "trespass"),
    "lie": ("false",),
    "lying": ("false",),
    "lied": ("false",),
    "gun": ("arms", "weapon"),
    "knife": ("weapon",),
    "abortion": ("miscarriage",),
    "remarry": ("marriage", "marries"),
    # From the hand-written training questions (training/sources/ipc_plain_questions_v1.jsonl):
    # their commonest everyday words that no IPC section uses.
    "careless": ("negligent", "rash"),
    "carelessly": ("negligent", "rash"),
    "attack": ("assault",),
    "attacked": ("assault",),
    "burglar": ("house-breaking", "trespass"),
    "shove": ("force", "assault"),
    "shoved": ("force", "assault"),
    "sex": ("intercourse",),
    "locked": ("confinement",),
    "hid": ("conceal",),
    "hide": ("conceal",),
    "hiding": ("conceal",),
    # A second count of the same questions (docs/EVALUATION.md, "Then AD"): the words with a
    # statutory synonym among those no IPC section uses.
    "old": ("age",),
    "crowd": ("assembly",),
    "crowds": ("assembly",),
    "arrest": ("apprehension", "apprehend"),
    "arrested": ("apprehension", "apprehend"),
    "arresting": ("apprehension", "apprehend"),
    "scare": ("fear",),
    "scared": ("fear",),
    "frighten": ("fear",),
    "frightened": ("fear",),
    # "die", "died", "dies", "dying" ("death"), "rob" ("robbery") and "thief" ("theft") were here
    # until the stemmer's word families read them as the statute's word itself (rule BN).
    "wedding": ("marriage",),
}


@lru_cache(maxsize=1)
def _statute_words() -> Mapping[str, frozenset[str]]:
    table: dict[str, set[str]] = {}
    for lay, statute in _LAY.items():
        # "house-breaking" is two words to the tokeniser, as it is in the indexed text
        table.setdefault(stem(lay), set()).update(stem(w) for s in statute for w in words(s))
    return {k: frozenset(v) for k, v in table.items()}


def alternatives(term: str) -> frozenset[str]:
    """The statute's stems for a question's stemmed term (empty when it has none)."""
    return _statute_words().get(term, frozenset())
