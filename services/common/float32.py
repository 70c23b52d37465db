"""The decimal a client meant by a proto ``float`` (float32) request field.

A client that sends 0.3 puts the nearest float32 on the wire, which Python reads back as the
double 0.30000001192092896: compared with the server's own default 0.3, an explicit "0.3"
would be a different threshold from an unset one (a sentence covering exactly 3 words in 10
passed with the option unset and failed with it set). A float32 carries about 7 significant
digits, so the server reads each such field as the shortest decimal that encodes to the same
float32: the one a client wrote, for any decimal of up to 6 significant digits and nearly every
one of 7. (Rounding to 7 digits, ``f"{value:.7g}"``, is not enough: it turns the float32 of
0.000976565 into 0.0009765651, for instance.)
"""

from __future__ import annotations

import math
import struct

_FLOAT32 = struct.Struct("<f")
# A float32 needs at most 9 significant digits to come back to itself.
_MAX_DIGITS = 9


def _as_float32(value: float) -> float:
    (rounded,) = _FLOAT32.unpack(_FLOAT32.pack(value))
    return float(rounded)


def decimal_from_float32(value: float) -> float:
    """``value`` (a float32 field as Python reads it) as the shortest decimal that encodes to the
    same float32; NaN and the infinities unchanged, for the request checks to reject."""
    if not math.isfinite(value):
        return value
    wire = _as_float32(value)
    for digits in range(1, _MAX_DIGITS + 1):
        decimal = float(f"{wire:.{digits}g}")
        try:
            if _as_float32(decimal) == wire:
                return decimal
        except OverflowError:  # near the largest float32, rounding up leaves its range
            continue
    return wire  # not reached: 9 digits always come back
