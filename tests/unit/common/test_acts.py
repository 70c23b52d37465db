"""The act registry (data/corpora/acts.json): one place that names each act, read by the corpus
loader, the reference parser and key terms. Found by a data engineer adding an act: six lists
to edit, and they disagreed ("HMA" was a key term, "IPC" a corpus word)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from services.common.language.acts import ACTS, REGISTRY_PATH, ActRegistryError, load_registry
from services.common.language.key_terms import GENERIC_WORDS, chunk_stems, extract_key_terms
from services.common.language.references import (
    ACT_ALIASES,
    SectionRef,
    asked_acts,
    named_acts,
    parse_section_refs,
)
from services.retrieval.corpus import ACT_BY_FILE_STEM
from services.retrieval.corpus import ACTS as CORPUS_ACTS

GOOD: dict[str, Any] = {
    "code": "MTA",
    "name": "Model Traffic Act, 2032",
    "file": "mta.json",
    "aliases": ["model traffic act"],
    "fields": {"section": "section", "title": "title", "text": "text"},
}


def write(tmp_path: Path, *entries: object) -> Path:
    path = tmp_path / "acts.json"
    path.write_text(json.dumps({"acts": list(entries)}), encoding="utf-8")
    return path


class TestShippedRegistry:
    def test_every_reader_sees_the_same_acts(self) -> None:
        codes = [act.code for act in ACTS]
        shipped = ["IPC", "CRPC", "CPC", "IEA", "NIA", "HMA", "IDA", "MVA", "COI"]
        # The 2023 codes that replaced the IPC, the CrPC and the Evidence Act: registered so
        # that a question about them is known for one, with no file shipped.
        assert codes == [*shipped, "BNS", "BNSS", "BSA"]
        assert list(CORPUS_ACTS) == codes
        assert list(ACT_ALIASES.values()) == codes
        assert sorted(ACT_BY_FILE_STEM.values()) == sorted(shipped)

    def test_every_act_code_is_a_corpus_word(self) -> None:
        # HMA, IDA and COI were missing from the hand-written list: "HMA" was a key term.
        assert {act.code.lower() for act in ACTS} <= GENERIC_WORDS
        assert extract_key_terms("What does the HMA say about divorce?").terms == ("divorc",)

    @pytest.mark.parametrize(
        ("query", "refs"),
        [
            ("s. 302 IPC", (SectionRef("302", "IPC"),)),
            ("section 41 of the Cr.P.C.", (SectionRef("41", "CRPC"),)),
            ("Article 21", (SectionRef("21", "COI"),)),
            ("section 138 of the Negotiable Instruments Act", (SectionRef("138", "NIA"),)),
            ("IEA 65B", (SectionRef("65B", "IEA"),)),
        ],
    )
    def test_references_read_the_registry_aliases(
        self, query: str, refs: tuple[SectionRef, ...]
    ) -> None:
        assert parse_section_refs(query) == refs


class TestRegistryChecks:
    def test_a_good_entry_loads(self, tmp_path: Path) -> None:
        (act,) = load_registry(write(tmp_path, GOOD))
        assert (act.code, act.provision, act.file) == ("MTA", "section", "mta.json")
        assert re.fullmatch(act.pattern, "MTA", re.I)
        assert re.fullmatch(act.pattern, "Model Traffic Act", re.I)

    @pytest.mark.parametrize(
        ("change", "message"),
        [
            ({"code": "mta"}, "code 'mta' must be"),
            ({"code": "MTA_1"}, "must be 1-16 upper-case"),
            ({"name": " "}, r"\(MTA\): name must be"),
            ({"aliases": ["model (traffic"]}, "not a regular expression"),
            ({"aliases": ["(model) traffic act"]}, "capturing group"),
            ({"aliases": ["(?:model)?"]}, "matches the empty string"),
            ({"aliases": "mta"}, "aliases must be a list"),
            ({"file": "mta.csv"}, "file must name a statutes .json"),
            ({"provision": "rule"}, "provision must be one of section, article"),
            ({"fields": {"section": "s"}}, "fields lacks text"),
            ({"fields": {"section": "s", "text": "t", "body": "b"}}, r"unknown field\(s\) body"),
            ({"year": 2032}, r"unknown key\(s\) year"),
            ({"aliases": ["(?i)model traffic act"]}, "not a regular expression"),
            ({"bare_code": "no"}, "bare_code must be true or false"),
            ({"caveat": ["abridged"]}, "caveat must be a string"),
        ],
    )
    def test_a_bad_entry_is_named(
        self, tmp_path: Path, change: dict[str, Any], message: str
    ) -> None:
        with pytest.raises(ActRegistryError, match=message) as info:
            load_registry(write(tmp_path, {**GOOD, **change}))
        assert "acts[0]" in str(info.value)

    def test_a_caveat_is_read_on_one_line_and_reaches_every_passage_of_the_act(
        self, tmp_path: Path
    ) -> None:
        from services.common.evidence import Chunk
        from services.common.language.acts import act_caveat
        from services.common.passages import document_to_proto

        (act,) = load_registry(write(tmp_path, {**GOOD, "caveat": "Abridged:\n  no schedules."}))
        assert act.caveat == "Abridged: no schedules."
        assert "Bharatiya Nyaya Sanhita" in act_caveat("IPC")  # the shipped registry says so
        assert act_caveat("NOPE") == ""
        ipc = [Chunk("IPC_420_0", "IPC_420", "Whoever cheats.", act="IPC", char_end=15)]
        squad = [Chunk("Normans_0", "Normans", "The Normans.", act="", char_end=12)]
        assert document_to_proto(ipc).source.caveat == act_caveat("IPC")
        assert document_to_proto(ipc, whole=False).source.caveat == ""  # a listed document
        assert document_to_proto(squad).source.caveat == ""

    def test_two_acts_may_not_share_a_code_or_a_file(self, tmp_path: Path) -> None:
        with pytest.raises(ActRegistryError, match="code MTA names more than one act"):
            load_registry(write(tmp_path, GOOD, {**GOOD, "file": "other.json"}))
        with pytest.raises(ActRegistryError, match=r"file mta\.json names more than one act"):
            load_registry(write(tmp_path, GOOD, {**GOOD, "code": "MTB", "file": "MTA.json"}))

    @pytest.mark.parametrize("text", ["", "[]", '{"acts": []}', "{not json"])
    def test_an_empty_or_broken_file_is_refused(self, tmp_path: Path, text: str) -> None:
        path = tmp_path / "acts.json"
        path.write_text(text, encoding="utf-8")
        with pytest.raises(ActRegistryError, match=r"acts\.json"):
            load_registry(path)

    def test_a_missing_file_is_refused(self, tmp_path: Path) -> None:
        with pytest.raises(ActRegistryError, match="cannot read"):
            load_registry(tmp_path / "missing.json")


class _Chunk:
    def __init__(self, text: str, act: str, act_name: str) -> None:
        self.text, self.title, self.act, self.act_name = text, "", act, act_name
        self.section, self.doc_id = "", f"{act}_1"


class TestActNamesAsHeldWords:
    def test_every_chunk_of_an_act_holds_its_names_specific_words(self) -> None:
        # "Who is liable under the Motor Vehicles Act?" names words no sentence repeats.
        stems = chunk_stems(
            _Chunk("Whoever drives without a licence.", "MVA", "Motor Vehicles Act, 1988")
        )
        assert {"motor", "vehicl"} <= stems

    def test_an_ipc_chunk_gains_nothing(self) -> None:
        # Every word of the IPC's name is a corpus word, so IPC evidence is judged as before.
        plain = chunk_stems(_Chunk("Whoever commits theft.", "", ""))
        assert (
            chunk_stems(_Chunk("Whoever commits theft.", "IPC", "Indian Penal Code, 1860")) == plain
        )


def test_every_service_image_ships_the_registry() -> None:
    # Every service imports the registry (through the reference parser), so the image stage all
    # three build on must hold it, not only the stage that builds the index.
    root = Path(__file__).resolve().parents[3]
    dockerfile = (root / "Dockerfile").read_text(encoding="utf-8")
    app_stage = dockerfile.split("FROM base AS app", 1)[1].split("\nFROM ", 1)[0]
    registry = REGISTRY_PATH.relative_to(root).as_posix()
    assert f"COPY {registry} {registry}" in app_stage
    assert "!data/corpora/" in (root / ".dockerignore").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("text", "codes"),
    [
        ("Under section 138 NIA, a cheque bounced.", ("NIA",)),
        ("The NIA investigates.", ()),
        ("Constitution of an assembly is unlawful.", ()),
        ("It offends the Constitution.", ("COI",)),
        ("Under the Motor Vehicles Act, a helmet is worn.", ("MVA",)),
        ("Article 21 protects life.", ("COI",)),  # no act named, a reference names one
        ("s. 302 of the penal code", ("IPC",)),
        ("Whoever cheats shall be punished.", ()),
    ],
)
def test_named_acts(text: str, codes: tuple[str, ...]) -> None:
    assert named_acts(text) == codes


@pytest.mark.parametrize(
    ("question", "codes"),
    [
        # The audit's questions (docs/EVALUATION.md, "Then K"): the BNS named by its code and
        # by the registry's phrase for "the law that replaced the IPC".
        ("Under the BNS, what is the punishment for cheating?", ("BNS",)),
        (
            "What is the punishment for murder under the new criminal law that replaced the IPC?",
            ("BNS",),
        ),
        ("under the bns what is cheating", ("BNS",)),
        ("What is theft under the Bharatiya Nyaya Sanhita?", ("BNS",)),
        ("Which act replaced the CrPC?", ("BNSS",)),
        ("section 63 of the bharatiya sakshya adhiniyam", ("BSA",)),
        ("What does the code of criminal procedure say about arrest?", ("CRPC",)),
        ("s. 420 CrPC", ("CRPC",)),
        ("What is theft under ipc?", ("IPC",)),
        # "The new criminal laws" are three: no act's alias.
        ("What changed under the new criminal laws?", ()),
        # A one-word name only as a proper name; a code that is also something else only
        # beside a section number.
        ("What is the constitution of an unlawful assembly?", ()),
        ("Does the Constitution protect life?", ("COI",)),
        ("Can nia officers arrest?", ()),
        # A code counts in any case only typed all in lower case: "Ida" is a name (rule L3).
        ("What did Ida tell the court about theft?", ()),
        ("What does the ida say about divorce?", ("IDA",)),
        ("What is s. 138 nia?", ("NIA",)),
    ],
)
def test_asked_acts(question: str, codes: tuple[str, ...]) -> None:
    assert asked_acts(question) == codes
