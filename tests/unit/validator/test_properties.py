"""Property tests: a citation outside the evidence is never grounded; odd unicode never crashes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from services.common.evidence import Chunk
from services.common.validation import Reason, ValidationReport, Verdict
from services.validator.engine import validate
from tests.unit.validator.samples import ipc_text

PROPERTY = settings(max_examples=200, deadline=None)
# Ids in the shapes the corpora use; the answer's "foreign" id is drawn from the same shapes.
_ID = st.from_regex(r"[A-Za-z]{1,4}_[0-9]{1,3}_[0-9]", fullmatch=True) | st.from_regex(
    r"[0-9]{1,6}_[0-9]{1,2}", fullmatch=True
)
_SENTENCES = st.sampled_from(
    [ipc_text("379"), ipc_text("420"), ipc_text("378"), "Aspirin lowered the risk of stroke."]
)


@st.composite
def evidence_and_foreign_id(draw: st.DrawFn) -> tuple[list[Chunk], str]:
    ids = draw(st.lists(_ID, min_size=0, max_size=5, unique=True))
    chunks = [Chunk(semantic_id=i, doc_id="D", text=draw(_SENTENCES)) for i in ids]
    foreign = draw(_ID.filter(lambda i: i not in ids))
    return chunks, foreign


class TestProperties:
    @PROPERTY
    @given(
        evidence_and_foreign_id(),
        _SENTENCES,
        st.sampled_from(
            ["{claim} [{foreign}].", "{claim} [{valid}][{foreign}].", "{claim}. [{foreign}]"]
        ),
    )
    def test_validate_never_grounds_an_answer_citing_outside_the_evidence(
        self, drawn: tuple[list[Chunk], str], claim: str, shape: str
    ) -> None:
        evidence, foreign = drawn
        valid = evidence[0].semantic_id if evidence else foreign
        answer = shape.format(claim=claim.rstrip("."), foreign=foreign, valid=valid)

        report = validate(answer, evidence)

        assert report.verdict is Verdict.NOT_GROUNDED
        assert not report.accepted
        assert foreign in report.invalid_citations
        assert report.reason is Reason.INVALID_CITATION

    @PROPERTY
    @given(
        st.text(max_size=300),
        st.lists(st.tuples(st.text(max_size=12), st.text(max_size=200)), max_size=6),
    )
    def test_validate_returns_a_report_for_any_unicode(
        self, answer: str, items: list[tuple[str, str]]
    ) -> None:
        evidence = [Chunk(semantic_id=i, doc_id="D", text=t) for i, t in items]

        report = validate(answer, evidence)

        assert isinstance(report, ValidationReport)
        assert 0.0 <= report.support_score <= 1.0
        for sentence in report.sentences:
            for span in sentence.spans:
                text = next(c.text for c in evidence if c.semantic_id == span.semantic_id)
                assert 0 <= span.char_start <= span.char_end <= len(text)
        if report.verdict is Verdict.GROUNDED:
            assert set(report.cited_ids) <= {c.semantic_id for c in evidence}
