"""Where secrets could leak, and a scan of it: every Redis key and value (decoded), files."""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import zlib
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import cast

import redis

from triggers.body_codec import unpack


def redis_values(client: redis.Redis, key: bytes) -> list[bytes]:
    """Every value stored under `key`, whatever its type."""
    kind = cast(bytes, client.type(key)).decode()
    if kind == "string":
        value = cast(bytes | None, client.get(key))
        return [value] if value is not None else []
    if kind == "hash":
        pairs = cast(dict[bytes, bytes], client.hgetall(key))
        return [b for pair in pairs.items() for b in pair]
    if kind == "list":
        return cast(list[bytes], client.lrange(key, 0, -1))
    if kind == "set":
        return list(cast(set[bytes], client.smembers(key)))
    if kind == "zset":
        return cast(list[bytes], client.zrange(key, 0, -1))
    if kind == "stream":
        entries = cast(list[tuple[bytes, dict[bytes, bytes]]], client.xrange(key))
        return [b for _, fields in entries for pair in fields.items() for b in pair]
    return []


def expanded(value: bytes) -> list[bytes]:
    """The value, plus what it decodes to: packed bodies and sessions (LZ4, or zlib from
    before), kombu's base64 bodies."""
    forms = [value]
    with contextlib.suppress(zlib.error, RuntimeError):
        forms.append(unpack(value))
    try:
        message = json.loads(value)
    except ValueError:
        return forms
    if isinstance(message, dict) and isinstance(message.get("body"), str):
        with contextlib.suppress(binascii.Error, ValueError):
            forms.append(base64.b64decode(message["body"], validate=True))
    return forms


def redis_haystacks(client: redis.Redis) -> Iterator[tuple[str, bytes]]:
    """Every key name and every (decoded) value in the database, with where it came from."""
    for key in client.scan_iter(count=1000):
        name = key.decode(errors="replace")
        yield f"redis key name {name}", key
        for n, value in enumerate(redis_values(client, key)):
            for form in expanded(value):
                yield f"redis {name} value #{n}", form


def file_haystacks(paths: Iterable[Path]) -> Iterator[tuple[str, bytes]]:
    for path in paths:
        if path.is_file():
            yield f"file {path.name}", path.read_bytes()


def leaks(
    secrets: Mapping[str, str], haystacks: Iterable[tuple[str, bytes]]
) -> tuple[list[str], int]:
    """(`secret in where` for every find, how many haystacks were scanned)."""
    found: list[str] = []
    scanned = 0
    for where, hay in haystacks:
        scanned += 1
        found += [f"{label} in {where}" for label, s in secrets.items() if s.encode() in hay]
    return sorted(set(found)), scanned
