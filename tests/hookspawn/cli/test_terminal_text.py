"""`ControlStripper`: what `sessions logs` shows of a log, whatever its commands printed."""

from __future__ import annotations

import pytest

from hookspawn.terminal_text import ControlStripper

ESC = "\x1b"
#: an OSC 8 link whose text shows one address and opens another
OSC8 = f"{ESC}]8;;https://evil.example/x{ESC}\\https://github.com/acme{ESC}]8;;{ESC}\\"

CASES = {
    "plain text, newline and tab": ("a\tb\nc\n", "a\tb\nc\n"),
    "CSI colour and cursor moves": (f"{ESC}[31mred{ESC}[0m {ESC}[2J{ESC}[1;1Hx", "red x"),
    "CSI with private and intermediate bytes": (f"{ESC}[?1049h{ESC}[1 qok", "ok"),
    "OSC 8 link ended by ST": (OSC8 + "\n", "https://github.com/acme\n"),
    "OSC title ended by BEL": (f"{ESC}]0;pwned\x07title", "title"),
    "DCS, SOS, PM and APC strings": (
        f"{ESC}Pq#0{ESC}\\1{ESC}Xsos{ESC}\\2{ESC}^pm{ESC}\\3{ESC}_apc{ESC}\\4",
        "1234",
    ),
    "other escape sequences": (f"{ESC}7{ESC}8{ESC}c{ESC}(B{ESC}#8{ESC}=done", "done"),
    "C0 controls but newline and tab": ("a\rb\x08c\x07d\x00e\x0cf\x7fg\n", "abcdefg\n"),
    "C1 controls and 8-bit CSI and OSC": (
        "a\u0085b\u009b31mc\u009d8;;https://x\u009cd\u0090x\u009ce",
        "abcde",
    ),
    "an unterminated OSC hides its own line only": (f"{ESC}]8;;https://x\nnext\n", "\nnext\n"),
    "CAN ends a string": (f"{ESC}]0;t\x18after", "after"),
    "an escape cut short by a newline keeps the newline": (f"x{ESC}\ny{ESC}[\nz", "x\ny\nz"),
    "ESC ESC [": (f"{ESC}{ESC}[31mred", "red"),
    "a string ended by a new sequence": (f"{ESC}]0;t{ESC}[31mred", "red"),
    "unicode text stays": ("héllo ✓ 日本\n", "héllo ✓ 日本\n"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_whole(name: str) -> None:
    given, shown = CASES[name]
    stripper = ControlStripper()
    out = stripper.feed(given.encode()) + stripper.end()
    assert out == shown
    assert not any((ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F for c in out)


@pytest.mark.parametrize("name", sorted(CASES))
def test_split_at_every_byte(name: str) -> None:
    given, shown = CASES[name]
    data = given.encode()
    for cut in range(1, len(data)):
        stripper = ControlStripper()
        out = stripper.feed(data[:cut]) + stripper.feed(data[cut:]) + stripper.end()
        assert out == shown, cut


def test_bytes_that_are_not_utf8_show_as_replacement_characters() -> None:
    stripper = ControlStripper()
    # a raw 0x9b is 8-bit CSI to some terminals: it never passes as itself
    assert stripper.feed(b"a\x9b31mb\xff") + stripper.end() == "a\ufffd31mb\ufffd"


def test_a_sequence_open_at_the_end_is_dropped() -> None:
    stripper = ControlStripper()
    assert stripper.feed(f"done{ESC}]8;;https://x".encode()) == "done"
    assert stripper.end() == ""
    assert stripper.feed(b"again") == "again"
