"""deploy/kubernetes, the kustomize base: every manifest it lists valid against Kubernetes' own
schemas (offline: kubernetes-validate ships them), every setting it passes one hookspawn reads
and a value hookspawn accepts, every file a setting names mounted, each pod given only the
secrets it reads, and the network policies keeping the runners off the admin API."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import kubernetes_validate
import pytest
import yaml

from agents.compiler import compile_dir
from agents.sandbox.config import HostPaths
from agents.sandbox.config import validate as validate_sandbox
from hookspawn.cli.parser import build_parser
from hookspawn.web.server.host_check import HostPolicy
from workers.secret_files import SECRET_FILE_FIELDS, variable
from workers.settings import Settings, split_csv

ROOT = Path(__file__).resolve().parents[1]
BASE = ROOT / "deploy" / "kubernetes"

#: the Kubernetes version the manifests are checked against (its schemas, strict: an unknown
#: field is an error)
KUBERNETES_VERSION = "1.33.0"

#: the pods hookspawn runs, by component label
COMPONENTS = ("web", "worker", "runner")

Resource = dict[str, Any]


def _kustomization() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((BASE / "kustomization.yaml").read_text())
    return loaded


def _generated(kustomization: dict[str, Any]) -> Iterator[Resource]:
    """The Secrets and ConfigMaps the kustomization's generators make (their files need not
    exist: the secrets are never committed), each key with a stand-in value."""
    for kind, field in (("Secret", "secretGenerator"), ("ConfigMap", "configMapGenerator")):
        for generator in kustomization.get(field, []):
            keys = [entry.partition("=")[0] for entry in generator.get("files", [])]
            value = base64.b64encode(b"stand-in").decode() if kind == "Secret" else "stand-in"
            yield {
                "apiVersion": "v1",
                "kind": kind,
                "metadata": {"name": generator["name"]},
                "data": dict.fromkeys(keys, value),
            }


@pytest.fixture(scope="module")
def resources() -> list[Resource]:
    """Every resource of the base: each document of each file `resources` lists, and what the
    generators make."""
    kustomization = _kustomization()
    found: list[Resource] = []
    for name in kustomization["resources"]:
        documents = yaml.safe_load_all((BASE / name).read_text())
        found += [doc for doc in documents if doc is not None]
    return found + list(_generated(kustomization))


def _named(resources: list[Resource], kind: str, name: str) -> Resource:
    matches = [r for r in resources if r["kind"] == kind and r["metadata"]["name"] == name]
    assert len(matches) == 1, f"{kind}/{name}: {len(matches)} found"
    return matches[0]


def _workloads(resources: list[Resource]) -> dict[str, Resource]:
    """Component → the Deployment or StatefulSet running hookspawn's `hookspawn <component>`."""
    found = {}
    for r in resources:
        if r["kind"] in ("Deployment", "StatefulSet"):
            component = r["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/component"]
            if component in COMPONENTS:
                found[component] = r
    return found


def _container(workload: Resource) -> Resource:
    containers = workload["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1, workload["metadata"]["name"]
    container: Resource = containers[0]
    return container


def _environment(resources: list[Resource], container: Resource) -> dict[str, str]:
    """What the container's environment holds: its ConfigMaps' data (`envFrom`), then `env`."""
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        assert set(source) == {"configMapRef"}, source  # secrets come as files, never variables
        env.update(_named(resources, "ConfigMap", source["configMapRef"]["name"])["data"])
    for entry in container.get("env", []):
        assert set(entry) == {"name", "value"}, entry
        env[entry["name"]] = entry["value"]
    return env


def _known_settings() -> set[str]:
    """Every variable hookspawn reads: a field of Settings, or the `_FILE` of a secret one."""
    names = {variable(field) for field in Settings.model_fields}
    return names | {f"{variable(field)}_FILE" for field in SECRET_FILE_FIELDS}


def test_the_base_lists_every_manifest_in_its_directory() -> None:
    listed = set(_kustomization()["resources"])
    present = {p.name for p in BASE.glob("*.yaml")} - {"kustomization.yaml"}
    assert listed == present


def test_every_manifest_is_valid_for_the_pinned_kubernetes(resources: list[Resource]) -> None:
    problems = []
    for resource in resources:
        where = f"{resource['kind']}/{resource['metadata']['name']}"
        try:
            kubernetes_validate.validate(resource, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            problems.append(f"{where}: {exc.message} at {list(exc.path)}")
        except kubernetes_validate.SchemaNotFoundError as exc:
            problems.append(f"{where}: {exc}")
    assert not problems, "\n".join(problems)
    kinds = {r["kind"] for r in resources}
    assert {
        "Deployment",
        "StatefulSet",
        "Service",
        "Secret",
        "HorizontalPodAutoscaler",
        "NetworkPolicy",
    } <= kinds


def test_a_manifest_breaking_the_schema_is_refused(resources: list[Resource]) -> None:
    """The validation above can fail: a misspelt field, a port that is not a number."""
    web = json.loads(json.dumps(_workloads(resources)["web"]))
    web["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(web, KUBERNETES_VERSION, strict=True)
    service = json.loads(json.dumps(_named(resources, "Service", "web")))
    service["spec"]["ports"][0]["port"] = "eight thousand"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(service, KUBERNETES_VERSION, strict=True)


def test_every_setting_the_manifests_pass_is_one_hookspawn_reads(
    resources: list[Resource],
) -> None:
    known = _known_settings()
    assert "HOOKSPAWN_REDIS_URL" in known and "HOOKSPAWN_ADMIN_TOKEN_FILE" in known
    passed: dict[str, set[str]] = {}
    for component, workload in _workloads(resources).items():
        for name in _environment(resources, _container(workload)):
            passed.setdefault(name, set()).add(component)
    for config in (r for r in resources if r["kind"] == "ConfigMap"):
        for name in config.get("data", {}):
            if name.isupper():  # a variable, not a file (agents, sandbox.json)
                passed.setdefault(name, set()).add(f"ConfigMap/{config['metadata']['name']}")
    assert set(_workloads(resources)) == set(COMPONENTS)
    assert {"HOOKSPAWN_REDIS_URL", "HOOKSPAWN_RUNNER"} <= set(passed)
    unknown = {name: sorted(where) for name, where in passed.items() if name not in known}
    assert not unknown, f"settings hookspawn does not read: {unknown}"


def test_every_file_a_setting_names_is_mounted_from_what_holds_it(
    resources: list[Resource],
) -> None:
    paths = {"HOOKSPAWN_GITHUB_PRIVATE_KEY_PATH", "HOOKSPAWN_SANDBOX_CONFIG"}
    for component, workload in _workloads(resources).items():
        container = _container(workload)
        volumes = {v["name"]: v for v in workload["spec"]["template"]["spec"]["volumes"]}
        mounts = {m["mountPath"]: m["name"] for m in container.get("volumeMounts", [])}
        env = _environment(resources, container)
        for name, value in env.items():
            if not (name.endswith("_FILE") or name in paths):
                continue
            directory, _, file = value.rpartition("/")
            assert directory in mounts, f"{component}: {name}={value} is on no volume"
            volume = volumes[mounts[directory]]
            source = volume.get("secret") or volume.get("configMap")
            assert source is not None, f"{component}: {name} on a volume with no secret"
            items = {i["path"]: i["key"] for i in source.get("items", [])}
            key = items.get(file, file) if items else file
            holder = (
                _named(resources, "Secret", source["secretName"])
                if "secretName" in source
                else _named(resources, "ConfigMap", source["name"])
            )
            assert key in holder["data"], f"{component}: {name}: no key {key!r} in {holder}"
        if component in ("web", "worker"):
            agents = env["HOOKSPAWN_AGENTS_DIR"] + "/agents"
            assert volumes[mounts[agents]]["configMap"]["name"] == "hookspawn-agents", component


def test_each_pod_is_given_only_the_secrets_it_reads(resources: list[Resource]) -> None:
    given = {}
    for component, workload in _workloads(resources).items():
        volumes = workload["spec"]["template"]["spec"]["volumes"]
        given[component] = sorted(
            item["key"] for v in volumes if "secret" in v for item in v["secret"]["items"]
        )
    assert given == {
        "web": ["admin-token", "github-app-private-key", "webhook-secret"],
        "worker": ["github-app-private-key"],
        "runner": ["anthropic-api-key", "openai-api-key"],
    }


def test_the_settings_each_pod_gets_are_values_hookspawn_accepts(
    resources: list[Resource], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Settings built from each pod's environment, as its process builds them; each secret file
    a stand-in."""
    for component, workload in _workloads(resources).items():
        env = _environment(resources, _container(workload))
        for name in [n for n in os.environ if n.startswith("HOOKSPAWN_")]:
            monkeypatch.delenv(name)
        for name, value in env.items():
            if name.endswith("_FILE"):
                stand_in = tmp_path / f"{component}-{name}"
                stand_in.write_text("stand-in\n")
                value = str(stand_in)
            monkeypatch.setenv(name, value)
        settings = Settings()
        assert settings.runner == "local", component
        assert settings.redis_url == env["HOOKSPAWN_REDIS_URL"]
        if component == "web":
            assert settings.admin_token == "stand-in" and settings.webhook_secret == ["stand-in"]
            assert settings.broker_base_url == env["HOOKSPAWN_BROKER_PUBLIC_URL"]
        if component == "runner":
            assert settings.anthropic_api_key == "stand-in"


def test_each_command_is_hookspawns_and_the_web_is_probed(resources: list[Resource]) -> None:
    workloads = _workloads(resources)
    for component, workload in workloads.items():
        command = _container(workload)["command"]
        assert command[:2] == ["hookspawn", component]
        build_parser().parse_args(command[1:])  # exits (fails the test) on a bad command line
    web = _container(workloads["web"])
    ports = {p["name"]: p["containerPort"] for p in web["ports"]}
    env = _environment(resources, web)
    command = web["command"]
    assert ports == {"http": int(command[command.index("--port") + 1]), "broker": 8001}
    assert int(env["HOOKSPAWN_BROKER_PORT"]) == ports["broker"]
    assert (web["livenessProbe"]["httpGet"]["path"], web["livenessProbe"]["httpGet"]["port"]) == (
        "/healthz",
        "http",
    )
    assert (web["readinessProbe"]["httpGet"]["path"], web["readinessProbe"]["httpGet"]["port"]) == (
        "/readyz",
        "http",
    )
    broker = _named(resources, "Service", "broker")
    assert (
        env["HOOKSPAWN_BROKER_PUBLIC_URL"] == f"http://broker:{broker['spec']['ports'][0]['port']}"
    )
    hpa = _named(resources, "HorizontalPodAutoscaler", "worker")
    assert hpa["spec"]["scaleTargetRef"]["name"] == workloads["worker"]["metadata"]["name"]
    assert _container(workloads["worker"])["resources"]["requests"]["cpu"]
    runner = _container(workloads["runner"])
    assert runner["securityContext"]["privileged"] is True  # bubblewrap's namespaces, cgroups


def test_the_web_answers_the_hosts_it_is_reached_by(resources: list[Resource]) -> None:
    """The probes, the Services' names (Prometheus, the client commands, the runners' sessions)
    and the public URL are hosts the web answers to; another one is refused, as the kubelet's
    default Host (the pod's address) would be."""
    web = _container(_workloads(resources)["web"])
    env = _environment(resources, web)
    policy = HostPolicy.of(
        bound=web["command"][web["command"].index("--host") + 1],
        public_url=env["HOOKSPAWN_PUBLIC_URL"],
        allowed=split_csv(env["HOOKSPAWN_ALLOWED_HOSTS"]),
    )
    for probe in ("livenessProbe", "readinessProbe"):
        headers = {h["name"]: h["value"] for h in web[probe]["httpGet"].get("httpHeaders", [])}
        assert policy.accepts(headers.get("Host", "10.1.2.3:8000")), probe
    services = [r["metadata"]["name"] for r in resources if r["kind"] == "Service"]
    for url in (env["HOOKSPAWN_URL"], env["HOOKSPAWN_BROKER_PUBLIC_URL"]):
        name = urlsplit(url).hostname
        assert name in services and policy.accepts(urlsplit(url).netloc), url
    assert policy.accepts(urlsplit(env["HOOKSPAWN_PUBLIC_URL"]).netloc)
    assert not policy.accepts("10.1.2.3:8000")


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """Whether a label selector (matchLabels, matchExpressions with In) selects `labels`."""
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for expression in selector.get("matchExpressions", []):
        assert expression["operator"] == "In", expression
        if labels.get(expression["key"]) not in expression["values"]:
            return False
    return True


def _admitted(policies: list[Resource], target: dict[str, str], port: int) -> list[Resource]:
    """The peers (from entries) admitted to `port` of pods labelled `target`."""
    peers = []
    for policy in policies:
        if not _selects(policy["spec"]["podSelector"], target):
            continue
        for rule in policy["spec"].get("ingress", []):
            if any(p["port"] == port for p in rule.get("ports", [])):
                peers += rule["from"]
    return peers


def test_network_policies_keep_redis_and_the_admin_api_to_who_needs_them(
    resources: list[Resource],
) -> None:
    policies = [r for r in resources if r["kind"] == "NetworkPolicy"]
    deny = [p for p in policies if p["spec"]["podSelector"] == {} and "ingress" not in p["spec"]]
    assert deny and deny[0]["spec"]["policyTypes"] == ["Ingress"]
    labels = {
        component: {"app.kubernetes.io/name": "hookspawn", "app.kubernetes.io/component": component}
        for component in (*COMPONENTS, "redis")
    }

    def pods_admitted(target: str, port: int) -> set[str]:
        peers = _admitted(policies, labels[target], port)
        assert all(set(peer) <= {"podSelector", "namespaceSelector"} for peer in peers), peers
        return {
            component
            for component, pod in labels.items()
            for peer in peers
            if "podSelector" in peer
            and "namespaceSelector" not in peer
            and _selects(peer["podSelector"], pod)
        }

    assert pods_admitted("redis", 6379) == {"web", "worker", "runner"}
    assert pods_admitted("web", 8000) == set()  # no pod of hookspawn's own: never a runner
    assert pods_admitted("web", 8001) == {"runner"}
    for component in ("worker", "runner"):  # they take no connection at all
        opened = [p for p in policies if p["spec"].get("ingress")]
        assert not [p for p in opened if _selects(p["spec"]["podSelector"], labels[component])]
    # the admin port also takes the labelled admin clients, and nothing by default
    admin_peers = _admitted(policies, labels["web"], 8000)
    assert {"podSelector": {"matchLabels": {"hookspawn.io/admin-access": "true"}}} in admin_peers
    # the ports the policies name are the Services' own
    assert _named(resources, "Service", "redis")["spec"]["ports"][0]["port"] == 6379


def test_the_agents_and_the_sandbox_of_the_base_are_hookspawns(
    resources: list[Resource], tmp_path: Path
) -> None:
    agents = tmp_path / ".auto" / "agents"
    agents.mkdir(parents=True)
    for name, text in _named(resources, "ConfigMap", "hookspawn-agents")["data"].items():
        (agents / name).write_text(text)
    compiled = compile_dir(agents.parent)
    assert not compiled.errors and not compiled.warnings, (compiled.errors, compiled.warnings)
    assert compiled.agents
    raw = json.loads(_named(resources, "ConfigMap", "hookspawn-sandbox")["data"]["sandbox.json"])
    config, problems = validate_sandbox(
        raw, host=HostPaths(host_home="/root", data_dir="/var/lib/hookspawn")
    )
    assert config is not None and not problems, problems
    assert config.backend == "srt"
