"""Docstrings that TRL parses exactly as intended, emitted as inert source text: no schema
text breaks out of the literal, none reads as structure to ``get_json_schema``'s parser
(an ``Args:`` inside a description, a ``(choices: ...)`` suffix, a newline in a parameter)."""

from __future__ import annotations

import re
import unicodedata

# get_json_schema splits the docstring at the first of these, wherever it occurs.
_SECTION = re.compile(r"(Args|Returns|Raises)(\s*):", re.IGNORECASE)
_CHOICES = re.compile(r"\(choices\s*:", re.IGNORECASE)
_LINE_BREAKS = re.compile(r"\r\n|[\r\n\v\f\x1c\x1d\x1e\x85\u2028\u2029]")


def neutralize(text: str) -> str:
    text = _SECTION.sub(lambda m: f"{m.group(1)}{m.group(2)} -", text)
    return _CHOICES.sub("(choices -", text)


def one_line(text: str) -> str:
    return " ".join(neutralize(text).split())


def paragraph(text: str) -> str:
    lines = [line.rstrip() for line in _LINE_BREAKS.split(neutralize(text).expandtabs(4))]
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):
            out.append(line)
    while out and not out[-1]:
        out.pop()
    return "\n".join(out).strip("\n")


def _escape_char(ch: str) -> str:
    if ch in '\\"':
        return "\\" + ch
    if ch == "\n":
        return "\n"
    if ch.isprintable() and unicodedata.category(ch) not in ("Cf", "Co", "Cs"):
        return ch
    code = ord(ch)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def literal_body(text: str) -> str:
    """The body of a triple-quoted literal whose value is exactly ``text``: a ``"`` next to
    another (which could close the literal) or at the very end is escaped."""
    out: list[str] = []
    for i, ch in enumerate(text):
        if ch == '"':
            near = text[i - 1 : i] == '"' or text[i + 1 : i + 2] == '"' or i == len(text) - 1
            out.append('\\"' if near else '"')
        else:
            out.append(_escape_char(ch))
    return "".join(out)


def indent_body(text: str, spaces: int) -> str:
    pad = " " * spaces
    return "\n".join((pad + line) if line else "" for line in text.split("\n"))
