"""A count and its noun in the CLIs' output."""

from __future__ import annotations

import pytest

from services.common.language.text import counted


@pytest.mark.parametrize(
    ("n", "expected"), [(0, "0 passages"), (1, "1 passage"), (2, "2 passages"), (21, "21 passages")]
)
def test_counted_is_singular_for_one_only(n: int, expected: str) -> None:
    assert counted(n, "passage") == expected
