"""Numbers as a person reads them: rounded for display, never into a wrong answer.

Results carry exact values (floats and Decimals at full precision); only what is shown to a
person is rounded, and by one rule, kept here:

- At least three significant digits. Values of 1 and more keep 2 decimals ("1,234,567.89",
  "12.35"); smaller ones get as many as three significant digits need, at least 2
  ("0.00123", "-0.004", "0.50").
- A nonzero value never reads as zero: below 1e-6 (and from 1e18) it is written in scientific
  notation ("1.2e-08"). Zero, -0.0 included, reads "0".
- Integers, and floats or Decimals holding a whole number, stay whole ("1,234"); Python ints
  are exact at any size. NaN and infinities read "NaN", "inf", "-inf". A bool is no number.

Exports (CSV), the JSON API and MCP keep exact values: they never pass through here. The
page has the same rule in JavaScript (``formatNumber``, ``server/static/util.js``), and the
charts' d3 formats come from ``d3_format``, which applies it to a whole column at once.
"""

from __future__ import annotations

import math
import numbers
import re
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

SIGNIFICANT = 3
SCIENTIFIC_BELOW = 1e-6
SCIENTIFIC_FROM = 1e18
MAX_D3_DIGITS = 15  # a double holds about 15 significant digits; more shows binary noise
# Columns whose numbers are labels, not amounts: 2024 is a year, not "2,024" (the page too)
NO_GROUPING = re.compile(r"(year|^yr$|(^|_)id$|code|zip|postal)", re.IGNORECASE)


def _real(value: Any) -> int | float | Decimal | None:
    """``value`` as a number this module formats, or None (bools, text, None)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float, Decimal)):
        return value
    if isinstance(value, numbers.Integral):  # numpy integers
        return int(value)
    if isinstance(value, numbers.Real):  # numpy floats, Fraction
        return float(value)
    return None


def _significant(value: Decimal) -> Decimal:
    """``value`` rounded to three significant digits."""
    return value.quantize(Decimal(1).scaleb(value.adjusted() - SIGNIFICANT + 1), rounding=ROUND_HALF_UP)


def _exponent(magnitude: float | Decimal) -> int:
    """The power of ten of ``magnitude`` once rounded to three significant digits (0.9996: 0)."""
    return _significant(Decimal(magnitude)).adjusted()


def _scientific(value: Decimal) -> str:
    rounded = _significant(value)
    mantissa = f"{rounded.scaleb(-rounded.adjusted()):f}"
    return f"{mantissa.rstrip('0').rstrip('.')}e{rounded.adjusted():+03d}"


def _finite(value: float | Decimal) -> bool:
    return value.is_finite() if isinstance(value, Decimal) else math.isfinite(value)


def _rounded(value: float | Decimal, decimals: int, grouping: bool, whole: bool) -> str:
    """The rule (module docstring) for a float or Decimal. Worked in Decimal on the float's
    shortest repr ("0.1", not its binary expansion), ties away from zero: as the page's
    ``Intl.NumberFormat`` does, so both show the same text."""
    if not _finite(value):
        if value.is_nan() if isinstance(value, Decimal) else math.isnan(value):  # a signalling NaN refuses ==
            return "NaN"
        return "inf" if value > 0 else "-inf"
    exact = value if isinstance(value, Decimal) else Decimal(repr(value))
    comma = "," if grouping else ""
    if exact.is_zero():
        return "0" if whole else f"{0:.{decimals}f}"
    if not SCIENTIFIC_BELOW <= abs(exact) < SCIENTIFIC_FROM:
        return _scientific(exact)
    if whole and exact == exact.to_integral_value():
        return f"{int(exact):{comma}}"
    places = decimals if abs(exact) >= 1 else max(decimals, SIGNIFICANT - 1 - _exponent(abs(exact)))
    text = f"{exact.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP):{comma}f}"
    head, _, tail = text.partition(".")
    tail = tail[:decimals] + tail[decimals:].rstrip("0")  # trailing zeros past ``decimals`` say nothing
    return f"{head}.{tail}" if tail else head


def format_number(value: Any, *, decimals: int = 2, grouping: bool = True) -> str:
    """``value`` for a person to read (module docstring); text and other values as ``str``, None as ""."""
    number = _real(value)
    if number is None:
        return "" if value is None else str(value)
    if isinstance(number, int):
        return f"{number:,}" if grouping else str(number)
    return _rounded(number, decimals, grouping, whole=True)


def format_percent(fraction: Any, *, signed: bool = False) -> str:
    """A fraction as a percent with 1 decimal ("49.5%", "50.0%"), by the same rule below 1%
    ("0.0123%"), so a small share never reads "0.0%"; ``signed`` puts "+" before a rise."""
    number = _real(fraction)
    if number is None:
        return format_number(fraction)
    if not isinstance(number, int) and not _finite(number):
        return _rounded(number, 1, True, whole=False)
    percent = (number if isinstance(number, Decimal) else Decimal(repr(number))) * 100  # 0.07: 7.0%, not 7.000000000000001%
    text = _rounded(percent, 1, True, whole=False) + "%"
    return "+" + text if signed and percent > 0 else text


def format_cell(column: str, value: Any) -> str:
    """A table cell: ``format_number``, without digit grouping in a year, id or code column."""
    return format_number(value, grouping=not NO_GROUPING.search(str(column)))


def d3_format(smallest: float | None, largest: float, *, integral: bool, percent: bool = False) -> str:
    """The d3 format that shows every value of a column by the rule, as far as one format can
    (a chart gets one per column): 2 decimals, more where the smallest nonzero magnitude
    (``smallest``) needs them for three significant digits, trailing zeros trimmed.

    A column whose smallest and largest values are too far apart for fixed decimals (more
    than ``MAX_D3_DIGITS`` digits, or values below 1e-6) is written with three significant
    digits ("1.2e-8")."""
    if percent:
        if smallest is None or smallest * 100 >= 1:
            return ".1%"
        return f".{min(20, max(1, SIGNIFICANT - 1 - _exponent(smallest * 100)))}~%"
    if integral:
        return ",d"
    if smallest is None or smallest >= 1:
        return ",.2~f"
    if smallest < SCIENTIFIC_BELOW:
        return f".{SIGNIFICANT}~g"
    places = max(2, SIGNIFICANT - 1 - _exponent(smallest))
    if largest >= 1 and _exponent(largest) + 1 + places > MAX_D3_DIGITS:
        return f".{SIGNIFICANT}~g"
    return f",.{places}~f"


__all__ = ["NO_GROUPING", "d3_format", "format_cell", "format_number", "format_percent"]
