"""MetricFlow's Jinja in filters, read without running a template engine.

A MetricFlow filter is SQL with Jinja calls in it: ``{{ Dimension('customer__country') }} =
'MX'``. Baton never renders Jinja (a template can run code); each ``{{ ... }}`` is parsed as a
Python *expression* with ``ast`` and must be exactly one of the calls MetricFlow defines:

- ``Dimension('entity__name')``, with ``entity_path=[...]`` and ``.grain('day')`` /
  ``.date_part('year')`` chained;
- ``TimeDimension('entity__name', 'grain')``;
- ``Entity('name')``, with ``entity_path=[...]``;
- ``Metric('name', group_by=[...])``.

Anything else (``{{ config.x }}``, ``{% if %}``, an unknown call, a keyword MetricFlow does not
take) is an error with its file and line: the filter would mean something Baton cannot know.
What each call resolves to is the reader's decision (``metricflow.py``): a column, a dimension
through the model's joins, or a named refusal.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from baton.semantic.errors import SemanticModelError

_BLOCK = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
_CALLS = {"Dimension": ("entity_path",), "TimeDimension": ("entity_path", "date_part_name"), "Entity": ("entity_path",),
          "Metric": ("group_by",)}
_CHAINED = {"grain", "date_part", "descending"}
MAX_FILTER = 4000


@dataclass(frozen=True, slots=True)
class JinjaCall:
    """One ``{{ ... }}`` of a filter: which call, its name (``customer__country``), and options."""

    function: str  # Dimension | TimeDimension | Entity | Metric
    name: str
    entity_path: tuple[str, ...] = ()
    grain: str | None = None
    date_part: str | None = None
    group_by: tuple[str, ...] = ()

    @property
    def path(self) -> tuple[str, ...]:
        """Every entity hop and the element's own name: ``Dimension('country__region',
        entity_path=['customer'])`` -> ``('customer', 'country', 'region')``."""
        return (*self.entity_path, *self.name.split("__"))


def _text(node: ast.expr, what: str) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    raise ValueError(f"{what} is a quoted name")


def _texts(node: ast.expr, what: str) -> tuple[str, ...]:
    if isinstance(node, (ast.List, ast.Tuple)):
        return tuple(_text(item, what) for item in node.elts)
    raise ValueError(f"{what} is a list of quoted names")


def parse_call(source: str) -> JinjaCall:
    """The call inside one ``{{ ... }}`` (module docstring), or ``ValueError`` saying why not."""
    try:
        tree = ast.parse(source.strip(), mode="eval").body
    except SyntaxError:
        raise ValueError("not a MetricFlow call") from None
    chained: dict[str, str] = {}
    while isinstance(tree, ast.Call) and isinstance(tree.func, ast.Attribute):
        method = tree.func.attr
        if method not in _CHAINED or len(tree.args) != 1 or tree.keywords:
            raise ValueError(f".{method}(...) is not a MetricFlow filter method")
        arg = tree.args[0]
        chained[method] = str(arg.value) if isinstance(arg, ast.Constant) else _text(arg, method)
        tree = tree.func.value
    if not isinstance(tree, ast.Call) or not isinstance(tree.func, ast.Name) or tree.func.id not in _CALLS:
        raise ValueError("only Dimension(...), TimeDimension(...), Entity(...) and Metric(...) may appear")
    function = tree.func.id
    if not tree.args or len(tree.args) > (2 if function in ("TimeDimension", "Metric") else 1):
        raise ValueError(f"{function}(...) takes the element's name")
    name = _text(tree.args[0], f"{function}'s first argument")
    options: dict[str, tuple[str, ...] | str] = {}
    grain = None
    if len(tree.args) > 1 and function == "Metric":
        options["group_by"] = _texts(tree.args[1], "group_by")
    elif len(tree.args) > 1:
        grain = _text(tree.args[1], "the grain")
    for keyword in tree.keywords:
        if keyword.arg not in _CALLS[function]:
            raise ValueError(f"{function}(...) takes no {keyword.arg}=")
        options[keyword.arg] = (_text(keyword.value, keyword.arg) if keyword.arg == "date_part_name"
                                else _texts(keyword.value, keyword.arg))
    entity_path = options.get("entity_path", ())
    group_by = options.get("group_by", ())
    date_part = options.get("date_part_name") or chained.get("date_part")
    return JinjaCall(function, name, tuple(entity_path), chained.get("grain") or grain,
                     str(date_part) if date_part else None, tuple(group_by))


def calls_in(text: str, where: str) -> list[tuple[str, JinjaCall]]:
    """Every ``{{ ... }}`` of ``text`` with its call; ``SemanticModelError`` (with ``where``) for
    one that is not a MetricFlow call, or Jinja statements (``{% ... %}``)."""
    if len(text) > MAX_FILTER:
        raise SemanticModelError(f"{where}: a filter longer than {MAX_FILTER} characters")
    if "{%" in text or "{#" in text:
        raise SemanticModelError(f"{where}: Jinja statements ({{% ... %}}) are not MetricFlow filter syntax")
    found = []
    for match in _BLOCK.finditer(text):
        try:
            found.append((match.group(0), parse_call(match.group(1))))
        except ValueError as exc:
            raise SemanticModelError(f"{where}: unknown Jinja {match.group(0)!r} in a filter ({exc})") from None
    rest = _BLOCK.sub("", text)
    if "{{" in rest or "}}" in rest:
        raise SemanticModelError(f"{where}: an unclosed {{{{ ... }}}} in a filter")
    return found


def filters_of(value: object, where: str) -> list[str]:
    """A ``filter:`` as its list of conditions (MetricFlow takes one string or a list, ANDed)."""
    if value is None or value == "" or value == []:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [v for v in value if v.strip()]
    raise SemanticModelError(f"{where}: a filter is a string or a list of strings")


__all__ = ["JinjaCall", "calls_in", "filters_of", "parse_call"]
