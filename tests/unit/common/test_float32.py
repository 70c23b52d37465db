"""Float32 request fields read as the decimal the client wrote."""

from __future__ import annotations

import math
import random
import struct

import pytest

from services.common.float32 import decimal_from_float32


def on_the_wire(value: float) -> float:
    """What a proto ``float`` field holding ``value`` reads as on the server."""
    (wire,) = struct.unpack("<f", struct.pack("<f", value))
    return float(wire)


class TestDecimalFromFloat32:
    def test_decimal_from_float32_reads_0_3_as_0_3(self) -> None:
        assert on_the_wire(0.3) == 0.30000001192092896  # the bug: not the default 0.3

        assert decimal_from_float32(on_the_wire(0.3)) == 0.3

    @pytest.mark.parametrize(
        "meant",
        [0.0, 1.0, 0.3, 0.21, 0.05, 0.9, 0.1, 0.5, 0.25, 0.123456, 0.3000001, 12.5, 1e-45, 3.4028235e38],
    )  # fmt: skip
    def test_decimal_from_float32_gives_back_the_decimal_sent(self, meant: float) -> None:
        assert decimal_from_float32(on_the_wire(meant)) == meant
        assert decimal_from_float32(on_the_wire(-meant)) == -meant

    def test_every_6_digit_decimal_where_7_digit_rounding_fails_comes_back(self) -> None:
        # Just above 2**-10 a float32's steps are wider than a 7th digit's: rounding to 7 digits
        # turns the float32 of 0.000976565 into 0.0009765651. The shortest decimal does not.
        assert float(f"{on_the_wire(0.000976565):.7g}") != 0.000976565
        sent = [m / 1e9 for m in range(976563, 1000000)]

        misread = [x for x in sent if decimal_from_float32(on_the_wire(x)) != x]

        assert misread == []

    def test_decimal_from_float32_always_encodes_to_the_same_float32(self) -> None:
        rng = random.Random(20261126)
        for _ in range(20000):
            (wire,) = struct.unpack("<f", struct.pack("<I", rng.getrandbits(32)))
            if math.isfinite(wire):
                decimal = decimal_from_float32(wire)
                assert on_the_wire(decimal) == wire
                assert float(f"{decimal:.9g}") == decimal  # at most 9 significant digits

    @pytest.mark.parametrize("value", [math.inf, -math.inf])
    def test_decimal_from_float32_keeps_the_infinities(self, value: float) -> None:
        assert decimal_from_float32(value) == value

    def test_decimal_from_float32_keeps_nan(self) -> None:
        assert math.isnan(decimal_from_float32(math.nan))
