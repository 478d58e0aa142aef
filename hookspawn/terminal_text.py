"""Session output made safe for an operator's terminal: every control sequence taken out.

A session's log holds whatever its commands printed. Written raw, an escape sequence from
a setup reaches the terminal of whoever reads the log: OSC 8 links that show one address
and open another, a title change, cursor moves that paint over earlier lines. What is left
is the text, with newline and tab (ECMA-48's forms of each sequence, 7-bit and 8-bit).

`escape_controls` is the same rule for text served rather than shown (GET
/sessions/{id}/log): each control character is written out as an escape (`\r`, `\x1b`), so
nothing reaches a terminal reading it with curl but newline, tab and visible text.
"""

from __future__ import annotations

import codecs
import re

__all__ = ["ControlStripper", "escape_controls", "whole_characters"]

_TEXT, _ESC, _INTERMEDIATE, _CSI, _STRING, _STRING_ESC = range(6)

#: a control character: C0 but newline and tab, DEL, C1
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
#: what may end a control string (OSC, DCS, SOS, PM, APC): BEL, ESC (of ESC \), ST, and a
#: newline, so that an unterminated string hides one line at most
_STRING_END = re.compile(r"[\x07\x1b\x9c\n\x18\x1a]")
#: ESC, CSI (8-bit), and the 8-bit openers of a control string
_ESCAPE, _CSI_8BIT = "\x1b", "\x9b"
_STRING_8BIT = frozenset("\x90\x98\x9d\x9e\x9f")
#: after ESC: the 7-bit openers of a control string (DCS, SOS, OSC, PM, APC)
_STRING_7BIT = frozenset("PX]^_")


class ControlStripper:
    """Feed it bytes as they come (`feed`), then `end`; it returns the text to show.

    A sequence split across two pieces is still taken out whole: the state carries over.
    Bytes that are not UTF-8 show as U+FFFD.
    """

    def __init__(self) -> None:
        self._decode = codecs.getincrementaldecoder("utf-8")(errors="replace").decode
        self._state = _TEXT

    def feed(self, data: bytes) -> str:
        return self._strip(self._decode(data))

    def end(self) -> str:
        """What is left once the input ends (a sequence still open is dropped)."""
        text = self._strip(self._decode(b"", final=True))
        self._state = _TEXT
        return text

    def _strip(self, text: str) -> str:
        kept: list[str] = []
        i, size = 0, len(text)
        while i < size:
            state = self._state
            if state == _TEXT:
                found = _CONTROL.search(text, i)
                stop = found.start() if found else size
                kept.append(text[i:stop])
                if found is None:
                    break
                char = text[stop]
                if char == _ESCAPE:
                    self._state = _ESC
                elif char == _CSI_8BIT:
                    self._state = _CSI
                elif char in _STRING_8BIT:
                    self._state = _STRING
                i = stop + 1  # any other control is dropped
            elif state == _STRING:
                found = _STRING_END.search(text, i)
                if found is None:
                    break  # the rest of this piece is inside the string
                char = text[found.start()]
                self._state = _STRING_ESC if char == _ESCAPE else _TEXT
                i = found.start() + (0 if char == "\n" else 1)  # the newline stays
            else:
                i = self._sequence(text[i], i)
        return "".join(kept)

    def _sequence(self, char: str, i: int) -> int:
        """One character inside an escape or CSI sequence: the index to go on from (`i` to
        look at `char` again as text, when it cannot belong to the sequence)."""
        code = ord(char)
        state = self._state
        if state == _STRING_ESC:
            # ESC \ is ST; ESC and anything else ends the string and starts a sequence
            self._state = _TEXT if char == "\\" else _ESC
            return i + 1 if char == "\\" else i
        if state == _ESC:
            if char == "[":
                self._state = _CSI
            elif char in _STRING_7BIT:
                self._state = _STRING
            elif 0x20 <= code <= 0x2F:
                self._state = _INTERMEDIATE
            elif 0x30 <= code <= 0x7E:
                self._state = _TEXT  # a complete two-character sequence (ESC 7, ESC c, …)
            else:
                self._state = _TEXT
                return i  # not part of a sequence: looked at again as text
            return i + 1
        if state == _INTERMEDIATE:
            if 0x20 <= code <= 0x2F:
                return i + 1
            self._state = _TEXT
            return i + 1 if 0x30 <= code <= 0x7E else i
        # CSI: parameter and intermediate bytes, then one final byte
        if 0x20 <= code <= 0x3F:
            return i + 1
        self._state = _TEXT
        return i + 1 if 0x40 <= code <= 0x7E else i


def _escape(found: re.Match[str]) -> str:
    """A carriage return as `\\r` (as hookspawn's own log lines show one), any other control
    as `\\xNN`."""
    char = found.group()
    return "\\r" if char == "\r" else f"\\x{ord(char):02x}"


def escape_controls(text: str) -> str:
    """`text` with every control character (C0 but newline and tab, DEL, C1: what
    `ControlStripper` takes out) written as its escape: `x\r[hookspawn …]` → `x\\r[hookspawn …]`."""
    return _CONTROL.sub(_escape, text)


def whole_characters(data: bytes) -> bytes:
    """`data` less a UTF-8 character cut at its end (its first bytes only), so a piece of a
    longer text decodes as the whole would; `data` itself when nothing would be left."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte < 0x80:
            return data  # ASCII: nothing is cut
        if byte >= 0xC0:  # the lead byte of the last character
            needed = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            kept = data if back >= needed else data[:-back]
            return kept or data
    return data
