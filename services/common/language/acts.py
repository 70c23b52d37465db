"""The acts a corpus may hold: one registry, ``data/corpora/acts.json``.

Three readers need the same facts about an act, so they live in one file rather than in three
lists that drift apart (a data engineer adding an act had to edit six places, and the lists
already disagreed on which abbreviations were corpus words):
- the corpus loader: which statutes file holds the act and where its JSON keeps each field;
- the reference parser: the names and abbreviations people write for it ("IPC", "penal code");
- key terms: words naming an act are corpus words, not what a question is about.

Adding an act is an entry in the registry (data/corpora/README.md, "Adding an act"). The file is
read once, at import, and checked: a bad entry stops every service and the ingest CLI with a
message naming the entry and the field. Pure apart from that one read.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = [
    "ACTS",
    "ACT_CODE",
    "REGISTRY_PATH",
    "Act",
    "ActRegistryError",
    "act_caveat",
    "load_registry",
    "registry_digest",
]

REGISTRY_PATH: Final = Path(__file__).resolve().parents[3] / "data" / "corpora" / "acts.json"

# An act code is what doc ids start with (``IPC_420``): upper-case letters and digits. The
# corpus loader checks a JSONL record's ``metadata.act`` with the same pattern.
ACT_CODE: Final = re.compile(r"^[A-Z][A-Z0-9]{0,15}$")
PROVISIONS: Final = ("section", "article")
FIELDS: Final = ("section", "title", "text", "chapter", "chapter_title")
_REQUIRED_FIELDS: Final = ("section", "text")


class ActRegistryError(ValueError):
    """The registry file is missing, not JSON, or an entry breaks a rule (the message says which)."""


@dataclass(frozen=True, slots=True)
class Act:
    """One act: ``code`` (the doc-id prefix), ``name`` as enacted, the regular expressions people
    write for it (case-insensitive, whole words), the statutes file that holds it, where that
    file's records keep each field, and what its provisions are called ("article" for a
    constitution: "Article 21" with no act named means it)."""

    code: str
    name: str
    aliases: tuple[str, ...]
    file: str
    fields: Mapping[str, str]
    provision: str = "section"
    bare_code: bool = True
    # What a reader must know about this act's text as the corpus holds it (abridged,
    # superseded): sent with every passage of the act (SourceMetadata.caveat); "" when nothing.
    caveat: str = ""

    @property
    def pattern(self) -> str:
        """One alternation of the act's code and aliases, for the reference parser."""
        return "|".join(dict.fromkeys((re.escape(self.code.lower()), *self.aliases)))


def load_registry(path: Path = REGISTRY_PATH) -> tuple[Act, ...]:
    """Read and check the registry at ``path``; raise ActRegistryError naming what is wrong."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ActRegistryError(f"{path}: cannot read the act registry ({exc})") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ActRegistryError(f"{path}: not a JSON act registry ({exc})") from exc
    entries = data.get("acts") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not entries:
        raise ActRegistryError(f'{path}: expected {{"acts": [ ... ]}} with at least one act')
    acts = tuple(_act(entry, f"{path}: acts[{i}]") for i, entry in enumerate(entries))
    for what, values in (
        ("code", [a.code for a in acts]),
        ("file", [a.file.lower() for a in acts if a.file]),
    ):
        repeated = sorted({v for v in values if values.count(v) > 1})
        if repeated:
            raise ActRegistryError(f"{path}: {what} {', '.join(repeated)} names more than one act")
    return acts


def _act(entry: object, where: str) -> Act:
    if not isinstance(entry, dict):
        raise ActRegistryError(f"{where}: expected an object")
    unknown = sorted(
        set(entry)
        - {"code", "name", "aliases", "file", "fields", "provision", "bare_code", "caveat"}
    )
    if unknown:
        raise ActRegistryError(f"{where}: unknown key(s) {', '.join(unknown)}")
    code = entry.get("code")
    if not isinstance(code, str) or not ACT_CODE.match(code):
        raise ActRegistryError(
            f"{where}: code {code!r} must be 1-16 upper-case letters or digits, starting with a"
            " letter (it starts every doc id: IPC_420)"
        )
    where = f"{where} ({code})"
    name = entry.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ActRegistryError(f"{where}: name must be a non-empty string")
    aliases = entry.get("aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) and a for a in aliases):
        raise ActRegistryError(f"{where}: aliases must be a list of non-empty strings")
    for alias in aliases:
        try:
            # As the reference parser joins it with the others: a whole word, in a group (an
            # inline flag such as "(?i)" compiles alone but breaks the joined pattern).
            re.compile(rf"\b(?:(?P<alias>{alias}))(?!\w)|x", re.I)
            compiled = re.compile(alias, re.I)
        except re.error as exc:
            raise ActRegistryError(
                f"{where}: alias {alias!r} is not a regular expression ({exc})"
            ) from exc
        if compiled.groups:
            raise ActRegistryError(f"{where}: alias {alias!r} has a capturing group; use (?:...)")
        if compiled.fullmatch(""):
            raise ActRegistryError(f"{where}: alias {alias!r} matches the empty string")
    file = entry.get("file", "")
    if not isinstance(file, str) or (file and not file.lower().endswith(".json")):
        raise ActRegistryError(f"{where}: file must name a statutes .json file")
    bare_code = entry.get("bare_code", True)
    if not isinstance(bare_code, bool):
        raise ActRegistryError(f"{where}: bare_code must be true or false")
    provision = entry.get("provision", "section")
    if provision not in PROVISIONS:
        raise ActRegistryError(f"{where}: provision must be one of {', '.join(PROVISIONS)}")
    caveat = entry.get("caveat", "")
    if not isinstance(caveat, str):
        raise ActRegistryError(f"{where}: caveat must be a string")
    fields = entry.get("fields")
    if not isinstance(fields, dict) or not all(isinstance(v, str) and v for v in fields.values()):
        raise ActRegistryError(f"{where}: fields must map field names to JSON keys")
    if unknown_fields := sorted(set(fields) - set(FIELDS)):
        raise ActRegistryError(
            f"{where}: unknown field(s) {', '.join(unknown_fields)} (known: {', '.join(FIELDS)})"
        )
    if missing := [f for f in _REQUIRED_FIELDS if f not in fields]:
        raise ActRegistryError(f"{where}: fields lacks {', '.join(missing)}")
    return Act(
        code=code,
        name=name.strip(),
        aliases=tuple(aliases),
        file=file,
        fields=dict(fields),
        provision=provision,
        bare_code=bare_code,
        caveat=" ".join(caveat.split()),
    )


def registry_digest(path: Path = REGISTRY_PATH) -> str:
    """sha256 of the registry's bytes: part of the index checksum, so editing an act's field map
    or name rebuilds an index built with the old one."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


ACTS: Final[tuple[Act, ...]] = load_registry()


def act_caveat(code: str) -> str:
    """What a reader must know about a registered act's text in the corpus ("" when nothing, or
    when ``code`` is no registered act's)."""
    return next((act.caveat for act in ACTS if act.code == code), "")
