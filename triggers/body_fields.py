"""What intake reads of a webhook body: the whole document checked, three of its fields kept.

Intake refuses (400) a body that is not a JSON object within the nesting limit, and records
three of its fields: `action`, `repository.full_name` and `installation.id`. Building the
whole document as Python objects only to drop them again cost a quarter of intake's CPU: a
13.5 KB pull_request is about a thousand objects, and the garbage collections they set off.
simdjson checks the whole document (its grammar, its UTF-8 and its numbers) into a buffer of
its own, and the three fields are read from there.

What this reads must be what orjson reads (the worker reads every body with it), so the body
is read by a full orjson parse instead wherever the two could differ:

- it starts with a byte-order mark (orjson refuses one; simdjson skips it);
- it holds an integer past 64 bits (simdjson refuses it; orjson reads it as a float);
- an object read here repeats a key (orjson keeps the last; simdjson finds the first);
- it opens more than MAX_DEPTH arrays and objects (the exact nesting is then measured);
- simdjson refuses it for any other reason, so that the refusal says what orjson says.
"""

from __future__ import annotations

import threading
from typing import Any, NamedTuple

import orjson
import simdjson

from triggers.errors import InvalidBody
from triggers.json_codec import MAX_DEPTH, TooDeep, check_depth, openings

_BOM = b"\xef\xbb\xbf"


_local = threading.local()


def _parser() -> simdjson.Parser:
    """This thread's parser: its buffers, sized to the largest body so far, are kept (a new
    one would allocate them again for every body). Nothing read from a body outlives
    `_read_checked`, which a parser needs before it parses again."""
    parser: simdjson.Parser | None = getattr(_local, "parser", None)
    if parser is None:
        parser = _local.parser = simdjson.Parser()
    return parser


class BodyFields(NamedTuple):
    action: str | None
    repository: str | None
    installation_id: int | None


def read_fields(document: bytes) -> BodyFields:
    """The fields of a body intake accepts; InvalidBody (naming the fault) for any other."""
    fields = None
    if not document.startswith(_BOM):
        try:
            fields = _read_checked(document)
        except Exception:  # the full parse below says what is wrong, if anything
            fields = None
    return _read_parsed(document) if fields is None else fields


def _read_checked(document: bytes) -> BodyFields | None:
    """The fields as simdjson reads them; None where its reading could differ from orjson's."""
    if openings(document) > MAX_DEPTH:
        return None
    body = _parser().parse(document)
    if not isinstance(body, simdjson.Object) or _repeats_a_key(body):
        return None
    action = body.get("action")
    repository = body.get("repository")
    full_name = None
    if isinstance(repository, simdjson.Object):
        if list(repository.keys()).count("full_name") > 1:
            return None
        full_name = repository.get("full_name")
    installation = body.get("installation")
    installation_id = None
    if isinstance(installation, simdjson.Object):
        if _repeats_a_key(installation):
            return None
        installation_id = installation.get("id")
    return _fields(action, full_name, installation_id)


def _repeats_a_key(value: simdjson.Object) -> bool:
    keys = list(value.keys())
    return len(keys) != len(set(keys))


def _read_parsed(document: bytes) -> BodyFields:
    """The fields from orjson's whole parse of the body: the reference, and the refusals."""
    # orjson refuses invalid UTF-8 itself, so the separate UTF-8 check (a second pass over
    # the body) only runs to name the problem once parsing has failed
    try:
        body = orjson.loads(document)
    except orjson.JSONDecodeError as exc:
        try:
            document.decode("utf-8")
        except UnicodeDecodeError as bad:
            raise InvalidBody(f"body is not UTF-8: byte {bad.start} is invalid") from None
        raise InvalidBody(f"body is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise InvalidBody(f"body is JSON {type(body).__name__}, not an object")
    try:
        check_depth(document, body)
    except TooDeep as exc:
        raise InvalidBody(f"body is {exc}", limit=exc.limit) from None
    repository = body.get("repository")
    installation = body.get("installation")
    return _fields(
        body.get("action"),
        repository.get("full_name") if isinstance(repository, dict) else None,
        installation.get("id") if isinstance(installation, dict) else None,
    )


def _fields(action: Any, full_name: Any, installation_id: Any) -> BodyFields:
    """Only a string action and repository name and an integer installation id are kept."""
    return BodyFields(
        action if isinstance(action, str) else None,
        full_name if isinstance(full_name, str) else None,
        installation_id
        if isinstance(installation_id, int) and not isinstance(installation_id, bool)
        else None,
    )
