"""The statement-verdict report counts right and given verdicts per half and per set."""

from __future__ import annotations

from evaluation.datasets import in_tune_half
from evaluation.statement_verdict import table


def test_table_counts_right_over_given_per_half_and_set() -> None:
    tune = [i for i in ("a", "b", "c", "d", "e", "f", "g", "h") if in_tune_half(i)][:2]
    odd = [i for i in ("a", "b", "c", "d", "e", "f", "g", "h") if not in_tune_half(i)][:1]
    results = {
        # (id, model verdict, shipped verdict, contradicted)
        "ipc": [(tune[0], "stated", "stated", "False"), (tune[1], "stated", "undecided", "True")],
        "scifact": [(odd[0], "stated", "stated", "False")],
    }
    gold = {"ipc": {tune[0]: "TRUE", tune[1]: "FALSE"}, "scifact": {odd[0]: "CONTRADICT"}}

    rows = table(results, gold).splitlines()

    assert (
        "| tune (tuned) | A: STATED, the model alone | 0.500 (1/2) | ipc 1/2, scifact 0/0 |" in rows
    )
    assert "| tune (tuned) | B: STATED, model + validator (ships) | 1.000 (1/1) |" in rows[3]
    assert (
        "| tune (tuned) | CONTRADICTED (not offered) | 1.000 (1/1) | ipc 1/1, scifact 0/0 |" in rows
    )
    assert "| odd (never tuned) | B: STATED, model + validator (ships) | 0.000 (0/1) |" in rows[6]
