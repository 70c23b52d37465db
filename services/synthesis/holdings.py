"""What the retrieval index holds, as the front door reads it: its acts and their provisions.

A question about an act the index does not hold ("Under the BNS, ...", "s. 420 CrPC") is
refused saying so, rather than answered from another act's text that shares its words; a
question naming a provision the index has no text of ("What is section 304B?") is told that,
rather than that no evidence came from it. Synthesis learns the holdings from retrieval's
``ListDocuments`` once per index version (``pipeline.SynthesisPipeline``); this module only
reads them. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from services.common.language.acts import ACTS
from services.common.language.references import SectionRef, normalise_section

__all__ = ["HeldDocument", "Holdings"]

_REGISTERED: Final = {act.code: act for act in ACTS}


@dataclass(frozen=True, slots=True)
class HeldDocument:
    """One indexed document as ``ListDocuments`` lists it: its act's code and name (empty for
    a document of no act: a SQuAD passage) and its section."""

    act: str
    act_name: str
    section: str


@dataclass(frozen=True, slots=True)
class Holdings:
    """The acts an index holds (code → name, in index order) and the provisions it holds text
    of (act code, normalised section), for the index version ``index_version``."""

    index_version: str
    acts: Mapping[str, str]
    provisions: frozenset[tuple[str, str]]

    @classmethod
    def of(cls, index_version: str, documents: Iterable[HeldDocument]) -> Holdings:
        acts: dict[str, str] = {}
        provisions: set[tuple[str, str]] = set()
        for doc in documents:
            if not doc.act:
                continue
            acts.setdefault(doc.act, doc.act_name)
            if doc.section:
                provisions.add((doc.act, normalise_section(doc.section)))
        return cls(index_version, acts, frozenset(provisions))

    @property
    def of_statutes(self) -> bool:
        """Whether the index holds a registered act. Only then does a question's act count: an
        index of other documents (SQuAD's, say) may discuss any act, the US Constitution too."""
        return any(code in _REGISTERED for code in self.acts)

    def unheld(self, asked: Sequence[str]) -> tuple[str, ...]:
        """The registered acts of ``asked`` (a question's, ``references.asked_acts``) that this
        index does not hold; none for an index that holds no registered act."""
        if not self.of_statutes:
            return ()
        return tuple(code for code in asked if code in _REGISTERED and code not in self.acts)

    def unheld_reason(self, codes: Sequence[str]) -> str:
        """Why a question about the acts ``codes`` (``unheld``) is refused, naming what the
        index holds: "the Bharatiya Nyaya Sanhita, 2023 is not among the documents: this index
        holds the Indian Penal Code, 1860"."""
        verb = "is" if len(codes) == 1 else "are"
        return (
            f"{_joined([_name(c) for c in codes])} {verb} not among the documents: this index "
            f"holds {self._held()}"
        )

    def absent(self, refs: Sequence[SectionRef]) -> tuple[SectionRef, ...]:
        """The provisions of ``refs`` of which the index holds no text: of an act it holds, a
        section it lacks; of no act named, a section no act it holds has. A provision of an
        act it does not hold is ``unheld``'s to say; an index of no registered act has no
        sections to lack."""
        if not self.of_statutes:
            return ()
        found: list[SectionRef] = []
        for ref in refs:
            if ref.act is not None:
                if ref.act in self.acts and (ref.act, ref.section) not in self.provisions:
                    found.append(ref)
            elif not any((code, ref.section) in self.provisions for code in self.acts):
                found.append(ref)
        return tuple(found)

    def absent_reason(self, refs: Sequence[SectionRef]) -> str:
        """Why the provisions ``refs`` (``absent``) give no evidence, each named with its act:
        "section 304B of the Indian Penal Code, 1860 is not in this index: its text is absent
        from the corpus"."""
        named = []
        for act, sections in _by_act(refs).items():
            registered = _REGISTERED.get(act or "")
            word = registered.provision if registered is not None else "section"
            word = word if len(sections) == 1 else f"{word}s"
            of = f" of {_name(act)}" if act else ""
            named.append(f"{word} {_joined(sections)}{of}")
        verb, its = ("is", "its") if len(refs) == 1 else ("are", "their")
        where = (
            "this index" if any(r.act for r in refs) else f"this index, which holds {self._held()}"
        )
        return f"{_joined(named)} {verb} not in {where}: {its} text is absent from the corpus"

    def _held(self) -> str:
        return _joined([_name(code, self.acts.get(code, "")) for code in self.acts]) or "no act"


def _by_act(refs: Sequence[SectionRef]) -> dict[str | None, list[str]]:
    grouped: dict[str | None, list[str]] = {}
    for ref in refs:
        grouped.setdefault(ref.act, []).append(ref.section)
    return grouped


def _name(code: str, indexed: str = "") -> str:
    """An act as a sentence names it: "the Indian Penal Code, 1860" (the registry's name, else
    the index's, else the code)."""
    registered = _REGISTERED.get(code)
    return f"the {registered.name if registered is not None else indexed or code}"


def _joined(items: Sequence[str]) -> str:
    """ "a", "a and b", "a, b and c"."""
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} and {items[-1]}"
