"""The display rule (``baton.numbers``): at least three significant digits, and a nonzero value
never shown as zero. A hostile corpus, a property over every float and Decimal, and the page's
JavaScript twin (``formatNumber`` in util.js) checked against the Python one under Node."""

from __future__ import annotations

import json
import math
import random
import shutil
import subprocess
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from baton.numbers import d3_format, format_cell, format_number, format_percent

STATIC = Path(__file__).resolve().parents[1] / "src" / "baton" / "server" / "static"
NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node is not installed (the page's JavaScript is checked under Node)")

CORPUS = [
    (0, "0"), (-0.0, "0"), (0.0, "0"), (Decimal("-0"), "0"),
    (1e-12, "1e-12"), (0.000000012, "1.2e-08"), (Decimal("1E-400"), "1e-400"), (0.000001, "0.000001"),
    (0.0049, "0.0049"), (0.005, "0.005"), (0.0012345, "0.00123"), (Decimal("0.0012"), "0.0012"), (-0.004, "-0.004"),
    (0.5, "0.50"), (0.1 + 0.2, "0.30"), (0.999999, "1.00"), (Fraction(1, 3), "0.333"),
    (1, "1"), (1.0, "1"), (Decimal("5.00"), "5"), (12.3, "12.30"), (12.3456, "12.35"), (999.995, "1,000.00"),
    (Decimal("999.995"), "1,000.00"), (-1234.5, "-1,234.50"), (1234567.891, "1,234,567.89"),
    (1234, "1,234"), (-1234, "-1,234"), (10**30, "1,000,000,000,000,000,000,000,000,000,000"),
    (1e15, "1,000,000,000,000,000"), (1e18, "1e+18"), (1e300, "1e+300"), (Decimal("1E+400"), "1e+400"),
    (float("nan"), "NaN"), (Decimal("NaN"), "NaN"), (Decimal("sNaN"), "NaN"),
    (float("inf"), "inf"), (float("-inf"), "-inf"), (Decimal("-Infinity"), "-inf"),
    (True, "True"), (False, "False"), (None, ""), ("0.0012", "0.0012"),
]


@pytest.mark.parametrize("value,shown", CORPUS, ids=[repr(v) for v, _ in CORPUS])
def test_the_corpus_reads_as_expected(value, shown):
    assert format_number(value) == shown


def test_numpy_scalars_are_numbers_and_numpy_bools_are_not():
    np = pytest.importorskip("numpy")
    assert format_number(np.float32(0.0012)) == "0.0012"
    assert format_number(np.int64(12345)) == "12,345"
    assert format_number(np.bool_(True)) == "True"


def _read_back(text: str) -> Decimal:
    return Decimal(text.replace(",", "").rstrip("%"))


def _close(shown: Decimal, exact: float | Decimal) -> bool:
    """Three significant digits: off by at most half a unit of the third digit (of a float's
    shortest repr: 5e-324 is the denormal whose binary expansion starts 4.94)."""
    exact = exact if isinstance(exact, Decimal) else Decimal(repr(exact))
    return abs(shown - exact) <= Decimal("0.005") * abs(exact)


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_every_float_reads_nonzero_and_within_three_significant_digits(x):
    text = format_number(x)
    assert (text == "0") == (x == 0)
    assert _close(_read_back(text), x), text


@given(st.decimals(allow_nan=False, allow_infinity=False, min_value=Decimal("-1e20"), max_value=Decimal("1e20")))
def test_every_decimal_reads_nonzero_and_within_three_significant_digits(x):
    text = format_number(x)
    assert (text == "0") == (x == 0)
    assert _close(_read_back(text), x), text


@pytest.mark.parametrize("fraction,shown", [
    (0.5, "50.0%"), (0.495, "49.5%"), (0.259, "25.9%"), (0.07, "7.0%"), (1, "100.0%"), (0, "0.0%"),
    (0.0004, "0.04%"), (0.0000123456, "0.00123%"), (1e-12, "1e-10%"), (Decimal("0.001"), "0.1%"), (float("nan"), "NaN"),
])
def test_percents_keep_one_decimal_and_small_shares_are_not_zero(fraction, shown):
    assert format_percent(fraction) == shown


def test_a_signed_percent_marks_a_rise_only():
    assert [format_percent(x, signed=True) for x in (0.495, -0.0001, 0)] == ["+49.5%", "-0.01%", "0.0%"]


def test_year_id_and_code_columns_are_not_grouped():
    assert [format_cell("year", 2024), format_cell("order_id", 123456), format_cell("zip", 10115)] == ["2024", "123456", "10115"]
    assert format_cell("revenue", 2024) == "2,024" and format_cell("ratio", 0.0012345) == "0.00123"


@pytest.mark.parametrize("smallest,largest,integral,percent,expected", [
    (None, 5, True, False, ",d"), (2.5, 900.0, False, False, ",.2~f"), (0.0012345, 1234567.891, False, False, ",.5~f"),
    (1e-8, 1.0, False, False, ".3~g"), (0.0012, 1e14, False, False, ".3~g"), (0.2, 0.9, False, True, ".1%"),
    (0.0004, 0.9, False, True, ".4~%"),
])
def test_d3_formats_give_the_smallest_value_three_significant_digits(smallest, largest, integral, percent, expected):
    assert d3_format(smallest, largest, integral=integral, percent=percent) == expected


def run_node(script: str, payload: object) -> object:
    assert NODE is not None
    done = subprocess.run([NODE, "-e", script], input=json.dumps(payload), capture_output=True, text=True, timeout=60, check=True)
    return json.loads(done.stdout)


# util.js loaded into a bare context: its helpers only touch the DOM when called. Intl is pinned
# to en-US so the check does not depend on the machine's locale.
PAGE_FORMAT = """
const fs = require("fs"), vm = require("vm");
const Intl_ = { NumberFormat: function (_locale, options) { return new Intl.NumberFormat("en-US", options); } };
const context = vm.createContext({ document: {}, Intl: Intl_ });
vm.runInContext(fs.readFileSync(%s, "utf8"), context);
const named = { NaN: NaN, inf: Infinity, "-inf": -Infinity };
const values = JSON.parse(fs.readFileSync(0, "utf8")).map((v) => typeof v === "string" ? named[v] : v);
console.log(JSON.stringify(values.map((v) => context.formatNumber(v))));
"""

JS_CORPUS = [0, -0.0, 1e-12, 1.2e-08, 2.5e-07, 0.000001, 0.0049, 0.005, 0.0012345, -0.004, 0.5, 0.1 + 0.2, 0.999999,
             1, 12.3, 12.3456, 999.995, -1234.5, 1234567.891, 1234, 1e15, 1e18, 1e300, 123456789012.345,
             float("nan"), float("inf"), float("-inf")]


def _many_floats() -> list[float]:
    """Every magnitude the rule distinguishes, both signs, and ties (1.125: both round away from zero)."""
    rng = random.Random(20240611)
    values = [sign * rng.uniform(1, 10) * 10.0 ** rng.randint(-14, 20) for sign in (1, -1) for _ in range(1500)]
    return values + [1.125, -1.125, 2.675, 0.0012345, 0.000999951, 0.99951, 1e-6, 9.9999999e-7, 1e18 - 128]


@needs_node
def test_the_page_formats_numbers_exactly_as_python_does():
    values = JS_CORPUS + _many_floats()
    payload = [v if math.isfinite(v) else format_number(v) for v in values]
    shown = run_node(PAGE_FORMAT % json.dumps(str(STATIC / "util.js")), payload)
    assert isinstance(shown, list)
    differ = [(v, js, format_number(v)) for v, js in zip(values, shown) if js != format_number(v)]
    assert not differ, differ[:10]
