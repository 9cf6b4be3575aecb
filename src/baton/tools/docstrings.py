"""What a function's docstring says about the function and each of its parameters.

A tool made from a function (``baton.tools.function``) shows the model the docstring's
summary as the tool's description and each parameter's entry as that parameter's
description. The three styles people write are read:

- Google: an ``Args:`` (or ``Arguments:``, ``Parameters:``) section of
  ``name (type): text`` entries, continued on more-indented lines;
- reST / Sphinx: ``:param name: text`` (``:param type name: text`` too);
- NumPy: a ``Parameters`` heading underlined with dashes, ``name : type`` lines, the text
  indented below.

Decisions: the description is the docstring up to its first section (Google, NumPy) or
field (reST), whitespace-normalised per paragraph; a parameter no entry mentions gets no
description (its type still goes to the schema); sections other than the parameters
(Returns, Raises, Examples) are not shown to the model.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field

_GOOGLE_HEADING = re.compile(r"^(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments)\s*:\s*$")
_ANY_GOOGLE_HEADING = re.compile(r"^[A-Z][A-Za-z ]{1,30}:\s*$")
_GOOGLE_ENTRY = re.compile(r"^\*{0,2}(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*(\([^)]*\))?\s*:\s*(?P<text>.*)$")
_REST_PARAM = re.compile(r"^:param\s+(?:[^:]*\s)?(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*:\s*(?P<text>.*)$")
_REST_FIELD = re.compile(r"^:[A-Za-z]+[^:]*:")
_NUMPY_UNDERLINE = re.compile(r"^-{3,}\s*$")
_NUMPY_ENTRY = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*(:.*)?$")


@dataclass(frozen=True, slots=True)
class DocstringInfo:
    """The summary (``description``) and one text per documented parameter."""

    description: str = ""
    parameters: dict[str, str] = field(default_factory=dict)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _paragraphs(lines: list[str]) -> str:
    text = "\n".join(lines).strip()
    return "\n\n".join(" ".join(p.split()) for p in re.split(r"\n\s*\n", text) if p.strip())


def _entries(lines: list[str], entry: re.Pattern[str]) -> dict[str, str]:
    """``name -> text`` for entries at the lowest indentation of ``lines``, each continued
    by the more-indented lines under it."""
    found: dict[str, list[str]] = {}
    body = [line for line in lines if line.strip()]
    if not body:
        return {}
    base = min(_indent(line) for line in body)
    current: list[str] | None = None
    for line in lines:
        if not line.strip():
            continue
        match = entry.match(line.strip()) if _indent(line) == base else None
        if match is not None:
            current = found.setdefault(match.group("name"), [])
            text = match.groupdict().get("text")
            if text:
                current.append(text)
        elif current is not None:
            current.append(line.strip())
    return {name: " ".join(" ".join(parts).split()) for name, parts in found.items()}


def parse_docstring(doc: str | None) -> DocstringInfo:
    """Read ``doc`` (already as ``inspect.getdoc`` gives it, or raw) in any of the three
    styles (module docstring)."""
    if not doc:
        return DocstringInfo()
    lines = inspect.cleandoc(doc).splitlines()
    summary_end = len(lines)
    parameters: dict[str, str] = {}
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        if _GOOGLE_HEADING.match(stripped):
            summary_end = min(summary_end, i)
            heading_indent = _indent(lines[i])
            block: list[str] = []
            i += 1
            while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > heading_indent):
                block.append(lines[i])
                i += 1
            parameters.update(_entries(block, _GOOGLE_ENTRY))
            continue
        if i + 1 < len(lines) and stripped and _NUMPY_UNDERLINE.match(lines[i + 1].strip()):
            summary_end = min(summary_end, i)
            heading = stripped
            i += 2
            block = []
            while i < len(lines) and not (i + 1 < len(lines) and lines[i].strip()
                                          and _NUMPY_UNDERLINE.match(lines[i + 1].strip())):
                block.append(lines[i])
                i += 1
            if heading in ("Parameters", "Other Parameters", "Keyword Arguments"):
                parameters.update(_entries(block, _NUMPY_ENTRY))
            continue
        if _REST_FIELD.match(stripped):
            summary_end = min(summary_end, i)
            match = _REST_PARAM.match(stripped)
            i += 1
            continued = []
            while i < len(lines) and lines[i].strip() and not _REST_FIELD.match(lines[i].strip()):
                continued.append(lines[i].strip())
                i += 1
            if match is not None:
                parameters[match.group("name")] = " ".join(" ".join([match.group("text"), *continued]).split())
            continue
        if _ANY_GOOGLE_HEADING.match(stripped) and _indent(lines[i]) == 0 and i > 0:
            summary_end = min(summary_end, i)  # Returns:, Raises:, Examples: ... end the summary
        i += 1
    return DocstringInfo(_paragraphs(lines[:summary_end]), parameters)
