"""Tagged JSON: values JSON cannot hold, written as ``{"$type": tag, ...}`` and read back as
the same Python values (DataFrames, dates, datetimes, times, timedeltas, decimals, bytes,
non-finite floats, and a user's own dict that happens to have a ``"$type"`` key).

``AIMessage`` (``baton.response``) uses it for its free-form fields through the ``TAGGED``
marker; durable pipelines use ``to_jsonable``/``from_jsonable`` for stage results. The format
predates the pydantic serialiser and is kept byte for byte, so answers stored by earlier
versions still load. Each tag is a pydantic model (one discriminated union), so a malformed
tagged value is a clear ``AnswerFormatError`` rather than a ``TypeError`` deep in a parser.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import math
import uuid
from collections.abc import Callable
from decimal import Decimal
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, GetCoreSchemaHandler, TypeAdapter, ValidationError
from pydantic_core import core_schema

from baton.errors import BatonError


class AnswerFormatError(BatonError, ValueError):
    """A serialized answer that does not read back (unknown fields or tags)."""


_TAG = "$type"


class _Tagged(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    def to_python(self) -> Any:
        raise NotImplementedError


class _Dict(_Tagged):
    """A user's own dict holding a ``"$type"`` key, wrapped so it is not read as a tag."""

    tag: Literal["dict"] = Field("dict", alias="$type")
    value: dict[str, Any]

    def to_python(self) -> Any:
        return {k: from_jsonable(v) for k, v in self.value.items()}


class _Iso(_Tagged):
    """A date, datetime or time in ISO form (``fromisoformat`` keeps the exact tzinfo)."""

    tag: Literal["datetime", "date", "time"] = Field(alias="$type")
    value: str

    def to_python(self) -> Any:
        parse: dict[str, Callable[[str], Any]] = {
            "datetime": dt.datetime.fromisoformat, "date": dt.date.fromisoformat, "time": dt.time.fromisoformat}
        try:
            return parse[self.tag](self.value)
        except ValueError as exc:
            raise AnswerFormatError(f"bad {self.tag} {self.value!r}") from exc


class _Timedelta(_Tagged):
    tag: Literal["timedelta"] = Field("timedelta", alias="$type")
    value: float

    def to_python(self) -> Any:
        return dt.timedelta(seconds=self.value)


class _Decimal(_Tagged):
    tag: Literal["decimal"] = Field("decimal", alias="$type")
    value: Decimal

    def to_python(self) -> Any:
        return self.value


class _Bytes(_Tagged):
    tag: Literal["bytes"] = Field("bytes", alias="$type")
    value: str

    def to_python(self) -> Any:
        return base64.b64decode(self.value)


class _Float(_Tagged):
    """NaN and the infinities, which JSON has no number for."""

    tag: Literal["float"] = Field("float", alias="$type")
    value: str

    def to_python(self) -> Any:
        return float(self.value)


class _Frame(_Tagged):
    tag: Literal["dataframe"] = Field("dataframe", alias="$type")
    columns: list[str]
    dtypes: list[str]
    rows: list[list[Any]]

    def to_python(self) -> Any:
        import pandas as pd

        rows = [[from_jsonable(v) for v in row] for row in self.rows]
        frame = pd.DataFrame(rows, columns=self.columns)
        for column, dtype in zip(self.columns, self.dtypes, strict=False):
            if dtype != "object" and dtype != str(frame[column].dtype):
                try:
                    frame[column] = frame[column].astype(dtype)
                except (TypeError, ValueError):
                    pass
        return frame


_TAGGED: TypeAdapter[_Tagged] = TypeAdapter(
    Annotated[_Dict | _Iso | _Timedelta | _Decimal | _Bytes | _Float | _Frame, Field(discriminator="tag")])


# Values written as they are, checked inline by exact type (no call per table cell); floats
# are not among them (NaN and the infinities are tagged), nor subclasses (a StrEnum's value).
_PLAIN = frozenset({str, int, bool, type(None)})


def to_jsonable(value: Any) -> Any:
    """Convert ``value`` to JSON-compatible data, tagging types JSON cannot hold.

    Plain dicts and lists (an answer's rows, chart spec and metadata: nearly every call) are
    recognised by exact type first, their plain members and string keys taken as they are:
    it runs for every answer, on every nested container."""
    kind = type(value)
    if kind is dict:
        converted = {k if type(k) is str else str(k): v if type(v) in _PLAIN else to_jsonable(v) for k, v in value.items()}
        # A user's own dict with a "$type" key (JSON columns, .NET payloads) must not be read
        # back as one of our tags: wrap it.
        return {_TAG: "dict", "value": converted} if _TAG in converted else converted
    if kind is list:
        return [v if type(v) in _PLAIN else to_jsonable(v) for v in value]
    if kind in _PLAIN:
        return value
    if kind is float:
        return value if math.isfinite(value) else {_TAG: "float", "value": repr(value)}
    return _other_jsonable(value)


def _other_jsonable(value: Any) -> Any:
    """``to_jsonable`` of anything but an exact dict, list, float or plain value."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {_TAG: "float", "value": repr(value)}
    if isinstance(value, StrEnum):
        return value.value
    if isinstance(value, dict):
        converted = {str(k): v if type(v) in _PLAIN else to_jsonable(v) for k, v in value.items()}  # a dict's subclass
        return {_TAG: "dict", "value": converted} if _TAG in converted else converted
    if isinstance(value, (list, tuple)):
        return [v if type(v) in _PLAIN else to_jsonable(v) for v in value]
    if isinstance(value, dt.datetime):
        return {_TAG: "datetime", "value": value.isoformat()}
    if isinstance(value, dt.date):
        return {_TAG: "date", "value": value.isoformat()}
    if isinstance(value, dt.time):
        return {_TAG: "time", "value": value.isoformat()}
    if isinstance(value, dt.timedelta):
        return {_TAG: "timedelta", "value": value.total_seconds()}
    if isinstance(value, Decimal):
        return {_TAG: "decimal", "value": str(value)}
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {_TAG: "bytes", "value": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, uuid.UUID):
        return str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if hasattr(value, "dtypes") and hasattr(value, "itertuples"):  # a pandas DataFrame
        return {
            _TAG: "dataframe",
            "columns": [str(c) for c in value.columns],
            "dtypes": [str(t) for t in value.dtypes],
            "rows": [[to_jsonable(v) for v in row] for row in value.itertuples(index=False, name=None)],
        }
    if hasattr(value, "item") and hasattr(value, "dtype"):  # numpy / pandas scalars
        return to_jsonable(value.item())
    # Anything else a database driver hands back (IP addresses, ranges, intervals, geometry,
    # ...) is kept as its text form rather than losing the whole answer.
    return str(value)


def from_jsonable(value: Any) -> Any:
    """Inverse of :func:`to_jsonable`."""
    if isinstance(value, list):
        return [from_jsonable(v) for v in value]
    if not isinstance(value, dict):
        return value
    tag = value.get(_TAG)
    if tag is None:
        return {k: from_jsonable(v) for k, v in value.items()}
    try:
        tagged = _TAGGED.validate_python(value)
    except ValidationError as exc:
        known = {"dict", "datetime", "date", "time", "timedelta", "decimal", "bytes", "float", "dataframe"}
        what = "unknown tagged JSON value" if tag not in known else "malformed tagged JSON value"
        raise AnswerFormatError(f"{what} {tag!r}") from exc
    return tagged.to_python()


class _Codec:
    """``Annotated`` marker: the field is written with :func:`to_jsonable` and read with
    :func:`from_jsonable` (free-form values: rows, metadata, logs)."""

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(
            from_jsonable, serialization=core_schema.plain_serializer_function_ser_schema(to_jsonable))


TAGGED = _Codec()
