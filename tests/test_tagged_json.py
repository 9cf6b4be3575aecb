"""Tagged JSON round trips for the values a table cell can hold, including the ones that
take the inline path (exact str/int/bool/None) and the ones that must not (NaN, a StrEnum,
a bool or int subclass, a user's dict with a "$type" key)."""

from __future__ import annotations

import datetime as dt
import json
import math
from decimal import Decimal
from enum import IntEnum, StrEnum

from baton.tagged_json import from_jsonable, to_jsonable


class Colour(StrEnum):
    RED = "red"


class Level(IntEnum):
    HIGH = 3


def test_rows_of_every_kind_of_cell_round_trip_through_json():
    rows = [["a", 1, True, None, 2.5], [float("nan"), float("inf"), Decimal("1.10"), dt.date(2025, 1, 2), b"\x00"],
            [Colour.RED, Level.HIGH, {"$type": "mine", "x": [1, float("-inf")]}, ("t", 1)]]
    text = json.dumps(to_jsonable(rows), allow_nan=False)  # nothing JSON cannot hold is left
    back = from_jsonable(json.loads(text))
    assert back[0] == ["a", 1, True, None, 2.5]
    assert math.isnan(back[1][0]) and back[1][1] == math.inf and back[1][2:] == [Decimal("1.10"), dt.date(2025, 1, 2), b"\x00"]
    assert back[2][0] == "red" and type(back[2][0]) is str and back[2][1] == 3
    assert back[2][2] == {"$type": "mine", "x": [1, -math.inf]} and back[2][3] == ["t", 1]


def test_dict_values_take_the_same_care():
    value = {"n": float("nan"), "s": "x", "nested": {"$type": "dict"}}
    back = from_jsonable(json.loads(json.dumps(to_jsonable(value), allow_nan=False)))
    assert math.isnan(back["n"]) and back["s"] == "x" and back["nested"] == {"$type": "dict"}
