"""The environment a session spec carries is typed, and a record stored before it was keeps
its bytes: it loads, is read through typed attributes, and writes back as it was."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from pydantic import ValidationError

from agents import compile_dir
from agents.environment_spec import (
    BaseImage,
    EnvironmentResource,
    PresetImage,
    Resources,
    SecretRef,
)
from triggers.session.spec import Origin, SessionSpec
from triggers.spawn_rules import build_spec

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / ".auto"

#: a session record as the store held it before the environment was typed (written by the
#: dict-built resource: every optional part present)
STORED = (
    b'{"id":"s-1","agent":"builder","harness":"codex","environment":{"name":"runtime",'
    b'"resource":{"name":"runtime","labels":{"team":"infra"},"annotations":{"note":"x"},'
    b'"spec":{"image":{"kind":"preset","name":"node24"},"baseImage":"node:24-bookworm-slim",'
    b'"steps":["apt-get install -y jq"],"setup":[{"name":"deps","commands":["npm ci"],'
    b'"cache":{"key":"npm","files":["package-lock.json"],"paths":["/home/user/.npm"]}},'
    b'{"name":"build","commands":["npm run build","echo done"]}],"setupCache":{"ttl":"24h"},'
    b'"resources":{"memoryMB":2048},"env":{"NODE_ENV":"production","TOKEN":{"$secret":'
    b'"npm-token","optional":false},"MAYBE":{"$secret":"other","optional":true}},'
    b'"approval":"prompt"}}},"systemPrompt":null,"tools":[],"env":{"AGENT_ONLY":"1",'
    b'"KEY":{"$secret":"api-key","optional":true}},"mounts":[{"repository":"acme/app",'
    b'"url":"https://github.com/acme/app.git","mountPath":"/workspace/app","ref":"main",'
    b'"depth":1,"auth":"none","capabilities":null,"commitAuthor":null,"installationId":null,'
    b'"gitPermissions":null,"eventDependent":false}],"workingDirectory":"/workspace/app",'
    b'"displayTitle":"T","initialPrompt":"P","message":null,"requester":{"login":"octo",'
    b'"id":1},"origin":{"kind":"manual","deliveryId":null,"parentSessionId":null,"depth":0,'
    b'"trigger":null,"triggerKey":null},"depth":0,"createdAt":"2026-12-01T10:00:00Z",'
    b'"broker":null}'
)

#: a spec compiled before `setupCache` was filled in: a base image, no setupCache, no
#: resources, a setup entry without cache
OLDEST = {
    "name": "plain",
    "labels": {},
    "annotations": {},
    "spec": {
        "image": {"kind": "base", "ref": "ghcr.io/acme/base:1"},
        "baseImage": "ghcr.io/acme/base:1",
        "steps": [],
        "setup": [{"name": "deps", "commands": ["true"]}],
        "env": {},
        "approval": "bypass",
    },
}


def test_a_record_stored_in_the_old_shape_loads_and_writes_back_byte_for_byte() -> None:
    spec = SessionSpec.model_validate_json(STORED)
    assert spec.without_input() == STORED
    with_input = spec.model_copy(update={"input": {"x": 1}}).to_bytes()
    assert json.loads(with_input) == {**json.loads(STORED), "input": {"x": 1}}


def test_the_stored_environment_is_read_through_typed_attributes() -> None:
    environment = SessionSpec.model_validate_json(STORED).environment
    assert environment.resource.labels == {"team": "infra"}
    spec = environment.spec
    assert spec.image == PresetImage(kind="preset", name="node24")
    assert spec.base_image == "node:24-bookworm-slim"
    assert [entry.name for entry in spec.setup] == ["deps", "build"]
    deps, build = spec.setup
    assert deps.cache is not None and deps.cache.paths == ("/home/user/.npm",)
    assert build.cache is None
    assert spec.cache_files == ["package-lock.json"]
    assert spec.snapshot_ttl == timedelta(hours=24)
    assert spec.resources == Resources(memory_mb=2048)
    assert spec.env == {
        "NODE_ENV": "production",
        "TOKEN": SecretRef(secret="npm-token", optional=False),
        "MAYBE": SecretRef(secret="other", optional=True),
    }
    assert spec.approval == "prompt"
    # the agent's own env is typed the same way
    assert SessionSpec.model_validate_json(STORED).env["KEY"] == SecretRef(
        secret="api-key", optional=True
    )


def test_a_spec_from_before_the_default_ttl_keeps_its_shape_and_takes_the_default() -> None:
    resource = EnvironmentResource.model_validate(OLDEST)
    assert resource.spec.image == BaseImage(kind="base", ref="ghcr.io/acme/base:1")
    assert resource.spec.setup_cache is None
    assert resource.spec.snapshot_ttl == timedelta(days=7)
    assert resource.spec.resources is None
    assert resource.to_json() == OLDEST
    raw = json.dumps(OLDEST, separators=(",", ":"))
    assert resource.model_dump_json(by_alias=True) == raw


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"setupCache": {"ttl": "7w"}}, "environment.resource.spec.setupCache.ttl"),
        ({"resources": {"memoryMB": 12}}, "environment.resource.spec.resources.memoryMB"),
        ({"approval": "ask"}, "environment.resource.spec.approval"),
        ({"env": {"A": {"$secret": 3}}}, "environment.resource.spec.env.A"),
        ({"image": {"kind": "docker", "ref": "x"}}, "environment.resource.spec.image"),
        ({"gpu": 1}, "environment.resource.spec.gpu"),
    ],
)
def test_a_stored_environment_that_is_not_one_is_refused_naming_where(
    change: dict[str, object], where: str
) -> None:
    document = json.loads(STORED)
    document["environment"]["resource"]["spec"].update(change)
    with pytest.raises(ValidationError) as refused:
        SessionSpec.model_validate(document)
    places = [".".join(map(str, error["loc"])) for error in refused.value.errors()]
    assert any(place.startswith(where) for place in places), places


def test_what_the_compiler_built_is_what_the_session_reads_back() -> None:
    result = compile_dir(EXAMPLES, secret_names={"tailscale-authkey"})
    assert result.ok and result.agents
    for agent in result.agents:
        spec = build_spec(
            session_id=f"s-{agent.name}",
            agent=agent,
            refs=[m.ref for m in agent.mounts],
            grants=[None for _ in agent.mounts],
            texts=(None, None, None),
            session_input=None,
            requester=None,
            origin=Origin(kind="manual"),
            created_at="2026-12-01T10:00:00Z",
        )
        stored = SessionSpec.model_validate_json(spec.without_input())
        assert stored.environment.resource == agent.environment_resource
        assert stored.env == agent.env
        assert (
            json.loads(spec.without_input())["environment"]["resource"]
            == (agent.to_json()["environmentResource"])
        )
