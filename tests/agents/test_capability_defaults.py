"""Capabilities in plain sight: `check` (text and --json) marks what comes from the defaults and
warns about a write nobody wrote; `explain` says "(default)" beside such a capability."""

from __future__ import annotations

import io
import json
from pathlib import Path

from hookspawn.cli.check.report import run_check
from tests.agents.conftest import BASE, Tree, find
from triggers.coverage import Coverage
from triggers.json_codec import load_body
from triggers.matching import TriggerIndex
from workers.agents_source import AgentSet
from workers.delivery.explain import explain, format_explain
from workers.github.installation import Installation

REPO = "Codertocat/Hello-World"
AGENT = (
    BASE
    + f"""\
mounts:
  - kind: git
    repository: {REPO}
    mountPath: /w
    ref: main
    auth: {{kind: githubApp, capabilities: CAPS}}
triggers:
  - kind: github
    event: pull_request
    filters:
      - {{path: github.pullRequest.authorAssociation, in: [OWNER]}}
"""
)


def check(tree: Tree, *args: str) -> tuple[int, str]:
    out = io.StringIO()
    code = run_check(
        tree.root, as_json="--json" in args, secret_names=(), out=out, strict="--strict" in args
    )
    return code, out.getvalue()


def test_check_marks_defaults_and_warns_about_a_default_write(tree: Tree) -> None:
    tree.write("agents/a.yaml", AGENT.replace("CAPS", "{contents: read}"))
    result = tree.compile()
    warning = find(result.warnings, "mounts.0.auth.capabilities", "pullRequests: write")
    assert "issues: write only because of the defaults" in warning.message
    code, text = check(tree)
    assert code == 0
    assert (
        "  /w: Codertocat/Hello-World @ main (githubApp: contents read, pullRequests write "
        "(default), issues write (default), checks read (default), actions read (default), "
        "workflows none (default), secrets none (default), merge none (default))"
    ) in text.splitlines()
    code, text = check(tree, "--strict")
    assert code == 1 and "only because of the defaults" in text
    code, text = check(tree, "--json")
    auth = json.loads(text)["agents"][0]["mounts"][0]["auth"]
    assert auth["capabilities"]["issues"] == "write"
    assert auth["defaultCapabilities"] == [
        "pullRequests",
        "issues",
        "checks",
        "actions",
        "workflows",
        "secrets",
        "merge",
    ]


def test_written_writes_and_default_reads_do_not_warn(tree: Tree) -> None:
    caps = "{contents: read, pullRequests: write, issues: none}"
    tree.write("agents/a.yaml", AGENT.replace("CAPS", caps))
    assert tree.compile().warnings == ()
    code, text = check(tree, "--strict")
    assert code == 0
    assert "issues none, checks read (default)" in text


def test_explain_says_default_beside_a_defaulted_capability(tree: Tree, webhooks_dir: Path) -> None:
    tree.write("agents/a.yaml", AGENT.replace("CAPS", "{contents: read, pullRequests: write}"))
    result = tree.compile()
    agents = AgentSet(result, TriggerIndex(result.agents))
    granted = {"contents": "read", "pull_requests": "write", "metadata": "read"}
    installation = Installation(
        id=7, account="Codertocat", status="active", repositories={70: REPO}, permissions=granted
    )
    body = load_body((webhooks_dir / "pull_request/opened.payload.json").read_bytes())
    body["pull_request"]["author_association"] = "OWNER"
    view = explain(
        "pull_request", body, agents=agents, coverage=Coverage({7: installation}), minting=True
    )
    (cover,) = view["triggers"][0]["plan"]["coverage"]
    assert cover["defaultCapabilities"][:2] == ["issues", "checks"]
    assert (
        "(actions: read (default), checks: read (default), issues: write (default))"
        in (cover["warning"])
    )
    text = format_explain(view)
    assert "/w: capabilities contents read, pullRequests write, issues write (default)" in text
    assert "actions: read (default)" in text


TWICE = (
    BASE
    + """\
mounts:
  - kind: git
    repository: acme/widgets
    mountPath: /w/ro
    ref: main
    auth:
      kind: githubApp
      capabilities: {contents: read, pullRequests: write, issues: none, actions: none}
  - kind: git
    repository: https://github.com/Acme/Widgets.git
    mountPath: /w/rw
    ref: main
  - kind: git
    repository: acme/widgets
    mountPath: /w/rw2
    ref: main
    auth:
      kind: githubApp
      capabilities: {contents: write, pullRequests: none, issues: read, workflows: write}
"""
)


def test_check_says_a_repository_mounted_twice_unites_its_grants_for_tools(tree: Tree) -> None:
    tree.write("agents/a.yaml", TWICE)
    code, text = check(tree, "--strict")
    assert code == 0, text
    # git: each checkout its own mount's credential; tools: the union (a mount without
    # GitHub App auth grants nothing, so it is not part of it)
    assert (
        "  acme/widgets is mounted at /w/ro, /w/rw2: git in each checkout gets that mount's own "
        "credential; GitHub tools on it get the union of their grants (contents write, "
        "pullRequests write, issues read, checks read, actions read, workflows write, "
        "secrets none, merge none)"
    ) in text.splitlines()
    tree.write(
        "agents/a.yaml",
        TWICE.replace("/w/rw2", "/w/rw3").replace(
            "acme/widgets\n    mountPath: /w/rw3", "acme/gadgets\n    mountPath: /w/rw3"
        ),
    )
    code, text = check(tree, "--strict")
    assert code == 0 and "is mounted at" not in text
