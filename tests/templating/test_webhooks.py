"""Templates rendered against envelopes built from recorded GitHub deliveries."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from templating import Dialect, UnresolvableTokenError, check_ref, compile_template
from tests.templating.envelopes import envelope, session_input


@pytest.mark.parametrize(
    ("event", "name", "source", "rendered"),
    [
        (
            "pull_request",
            "opened.payload.json",
            "refs/pull/{{payload.github.pullRequest.number}}/head",
            "refs/pull/2/head",
        ),
        (
            "pull_request",
            "opened.payload.json",
            "refs/heads/{{ payload.github.pullRequest.head.ref }}",
            "refs/heads/changes",
        ),
        ("push", "with-new-branch.payload.json", "{{ payload.github.ref }}", "refs/heads/master"),
        (
            "pull_request",
            "synchronize.payload.json",
            "{{ payload.github.pullRequest.base.ref }}",
            "master",
        ),
    ],
)
def test_ref_templates_on_real_deliveries(
    webhooks_dir: Path, event: str, name: str, source: str, rendered: str
) -> None:
    env = envelope(webhooks_dir, event, name)
    ref = compile_template(source, Dialect.REF).render(session_input(env))
    assert ref == rendered
    check_ref(ref)


def test_trigger_event_id_comes_from_the_delivery(webhooks_dir: Path) -> None:
    env = envelope(webhooks_dir, "pull_request", "opened.payload.json")
    template = compile_template("spawn/{{ triggerEventId }}", Dialect.REF)
    assert template.render(session_input(env)) == "spawn/delivery-pull_request-opened.payload.json"


def test_text_templates_on_real_deliveries(webhooks_dir: Path) -> None:
    env = envelope(webhooks_dir, "pull_request", "opened.payload.json")
    title = compile_template(
        "Review #{{ github.pullRequest.number }}: {{ github.pullRequest.title }}", Dialect.TEXT
    )
    assert title.render(env) == "Review #2: Update the README with new information."
    labels = compile_template(
        "{{ github.pullRequest.labels.0.name }} draft={{ github.pullRequest.draft }} "
        "by {{ github.sender.login }} ({{ github.event }})",
        Dialect.TEXT,
    )
    assert labels.render(env) == "bug draft=false by Codertocat (pull_request)"


def test_null_body_is_not_a_scalar(webhooks_dir: Path) -> None:
    env = envelope(webhooks_dir, "pull_request", "opened.with-null-body.json")
    assert env["github"]["pullRequest"]["body"] is None
    with pytest.raises(UnresolvableTokenError) as caught:
        compile_template("{{ github.pullRequest.body }}", Dialect.TEXT).render(env)
    assert (caught.value.reason, caught.value.found) == ("not_scalar", "null")


def test_missing_pull_request_on_a_push(webhooks_dir: Path) -> None:
    env = envelope(webhooks_dir, "push", "payload.json")
    template = compile_template("refs/pull/{{payload.github.pullRequest.number}}/head", Dialect.REF)
    with pytest.raises(UnresolvableTokenError) as caught:
        template.render(session_input(env))
    assert caught.value.token == "{{payload.github.pullRequest.number}}"
    assert caught.value.segment == "pullRequest"
    assert caught.value.reason == "missing"


_SEGMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)


def _leaves(
    value: Any, path: tuple[str | int, ...] = ()
) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            if _SEGMENT.fullmatch(key) and not key.startswith("__"):
                yield from _leaves(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaves(item, (*path, index))
    elif value is not None:
        yield path, value


def _expected(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value)


def test_every_scalar_of_every_delivery_renders(webhooks_dir: Path) -> None:
    files = sorted(webhooks_dir.glob("*/*.json"))
    assert len(files) > 100
    rendered_tokens = 0
    for file in files:
        env = envelope(webhooks_dir, file.parent.name, file.name)
        leaves = list(_leaves(env))
        source = "\n\\{{ x }} ".join(
            "{{ " + ".".join(str(s) for s in path) + " }}" for path, _ in leaves
        )
        template = compile_template(source, Dialect.TEXT)
        expected = "\n{{ x }} ".join(_expected(value) for _, value in leaves)
        if len(expected.encode()) > 64 * 1024:
            continue
        assert template.render(env) == expected, file
        rendered_tokens += len(template.tokens)
    assert rendered_tokens > 10_000
