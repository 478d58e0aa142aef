"""Agent-level rules: name, harness, tools, env, secrets, uniqueness, strictness, directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents import compile_dir
from tests.agents.conftest import BASE, ENV, Tree, find

MOUNT = (
    "mounts:\n"
    "  - {kind: git, repository: acme/w, mountPath: /w, ref: main, auth: {kind: githubApp}}\n"
)


def test_minimal_agent(tree: Tree) -> None:
    agent = tree.agent("")
    assert agent.name == "a"
    assert agent.harness == "claude-code"
    assert agent.environment == "runtime"
    assert agent.mounts == () and agent.triggers == () and agent.tools == ()
    assert agent.env == {} and agent.system_prompt is None and agent.working_directory is None
    assert agent.source_file == ".auto/agents/a.yaml"
    assert not agent.event_dependent


def test_agent_to_json_is_camel_case_and_serialisable(tree: Tree) -> None:
    agent = tree.agent(
        MOUNT
        + "systemPrompt: hi\nenv: {A: x, S: {$secret: s}}\n"
        + "triggers:\n  - {kind: github, event: push}\n"
    )
    body = json.loads(json.dumps(agent.to_json()))
    assert set(body) >= {
        "name",
        "harness",
        "environment",
        "environmentResource",
        "mounts",
        "triggers",
        "workingDirectory",
        "systemPrompt",
        "tools",
        "env",
        "eventDependent",
        "sourceFile",
    }
    assert body["env"] == {"A": "x", "S": {"$secret": "s", "optional": False}}
    assert body["workingDirectory"] == "/w"


@pytest.mark.parametrize("name", ["a", "A.b_c-1", "x" * 128])
def test_valid_names(tree: Tree, name: str) -> None:
    assert tree.agent("", name="a").name == "a"
    tree.write("agents/a.yaml", BASE.replace("name: a", f"name: '{name}'"))
    assert tree.compile().agents[0].name == name


@pytest.mark.parametrize(("harness"), ["claude-code", "codex"])
def test_harnesses(tree: Tree, harness: str) -> None:
    tree.write("agents/a.yaml", BASE.replace("claude-code", harness))
    assert tree.compile().agents[0].harness == harness


NEGATIVE = [
    (BASE.replace("name: a", "name: 'a b'"), "name", "is not valid"),
    (BASE.replace("name: a", "name: '" + "x" * 129 + "'"), "name", "is not valid"),
    (BASE.replace("name: a", "name: 5"), "name", "must be a string"),
    (BASE.replace("claude-code", "gpt"), "harness", "claude-code | codex"),
    (BASE + "descripton: x\n", "descripton", "unknown key 'descripton'"),
    (BASE + "systemPrompt: [a]\n", "systemPrompt", "must be a string"),
    (BASE + "tools: github\n", "tools", "must be a list"),
    (BASE + "tools: [github]\n", "tools.0", "{kind: ...}"),
    (BASE + "tools: [{kind: slack}]\n", "tools.0.kind", "must be one of github"),
    (BASE + "tools: [{allow: [x]}]\n", "tools.0.kind", "required field"),
    (BASE + "tools: [{kind: github, allow: get_issue}]\n", "tools.0.allow", "list of strings"),
    (BASE + "tools: [{kind: github, deny: [x]}]\n", "tools.0.deny", "unknown key"),
    (BASE + "env: [A]\n", "env", "map of variables"),
    (BASE + "env: {A-B: x}\n", "env.A-B", "not a valid variable name"),
    (BASE + "env: {A: true}\n", "env.A", "must be a string"),
    (BASE + "env: {A: {$secret: ''}}\n", "env.A.$secret", "must not be empty"),
    (BASE + "env: {A: {secret: x}}\n", "env.A.secret", "unknown key"),
]


@pytest.mark.parametrize(("text", "path", "fragment"), NEGATIVE)
def test_agent_rule_violations(tree: Tree, text: str, path: str, fragment: str) -> None:
    find(tree.errors(text, base=""), path, fragment)


@pytest.mark.parametrize(
    "variable",
    ["HOME", "XDG_CONFIG_HOME", "LD_PRELOAD", "LD_LIBRARY_PATH", "TMPDIR", "HTTPS_PROXY"],
)
def test_a_variable_the_sandbox_sets_itself_is_an_error_in_either_env(
    tree: Tree, variable: str
) -> None:
    """HOME, XDG_*, the loader's LD_* and the sandbox's security settings are the runtime's:
    neither the agent's env nor its environment's may set them, literal or secret."""
    agent_env = find(tree.errors(f"env: {{{variable}: /x, KEPT: y}}\n"), f"env.{variable}", "")
    assert variable in agent_env.message and "sandbox's own" in agent_env.message
    assert agent_env.line == 6
    secret = tree.errors(f"env: {{{variable}: {{$secret: s}}}}\n")
    find(secret, f"env.{variable}", "cannot set it")
    inline = find(
        tree.errors("", base=f"name: a\nharness: codex\n{ENV}  env: {{{variable}: /x}}\n"),
        f"environment.env.{variable}",
        "cannot set it",
    )
    assert variable in inline.message and inline.line == 6
    # the name is compared as the runtime would: case does not make it another variable
    find(tree.errors(f"env: {{{variable.lower()}: /x}}\n"), f"env.{variable.lower()}", "")
    assert tree.agent("env: {HOMEPAGE: x, LD_BIND_NOW: '1', MY_XDG_DIR: y}\n").env == {
        "HOMEPAGE": "x",
        "LD_BIND_NOW": "1",
        "MY_XDG_DIR": "y",
    }


def test_github_tool_without_a_github_app_mount_warns(tree: Tree) -> None:
    tree.write("agents/a.yaml", BASE + "tools: [{kind: github, allow: [get_issue]}]\n")
    result = tree.compile()
    assert result.ok
    find(result.warnings, "tools.0", "needs a githubApp mount")
    written = MOUNT.replace("githubApp}", "githubApp, capabilities: {issues: read}}")
    written = written.replace("issues: read", "contents: read, pullRequests: read, issues: read")
    tree.write("agents/a.yaml", BASE + written + "tools: [{kind: github}]\n")
    assert tree.compile().warnings == ()


GITHUB_MOUNT = """\
mounts:
  - kind: git
    repository: acme/widgets
    mountPath: /w
    ref: main
    auth: {kind: githubApp, capabilities: CAPS}
tools:
  - kind: github
    allow: [get_issue, TOOL]
"""


@pytest.mark.parametrize(
    ("tool", "needs", "short", "enough"),
    [
        ("merge_pull_request", "merge: write", "{}", "{merge: write}"),
        ("enable_pull_request_auto_merge", "merge: write", "{contents: read}", "{merge: write}"),
        ("actions_secret_list", "secrets: read or write", "{}", "{secrets: read}"),
        ("create_pull_request", "pullRequests: write", "{pullRequests: read}", "{}"),
        ("rerun_failed_jobs", "actions: write", "{}", "{actions: write}"),
        ("actions_run_trigger", "actions: write", "{actions: read}", "{actions: write}"),
    ],
)
def test_a_github_tool_no_mount_grants_is_a_warning_and_the_agent_loads(
    tree: Tree, tool: str, needs: str, short: str, enough: str
) -> None:
    text = GITHUB_MOUNT.replace("TOOL", tool)
    tree.write("agents/a.yaml", BASE + text.replace("CAPS", short))
    result = tree.compile()
    assert result.ok and result.errors == ()
    warning = find(result.warnings, "tools.0.allow.1", needs)
    assert tool in warning.message and "no mount" in warning.message
    assert "never sees it" in warning.message and warning.line == 14
    # the allowlist is kept as written: the session's visibility leaves the tool out
    assert result.agents[0].tools[0]["allow"] == ["get_issue", tool]
    assert [w.path for w in result.warnings if w.path.startswith("tools")] == ["tools.0.allow.1"]
    agent = tree.agent(text.replace("CAPS", enough))
    assert agent.tools[0]["allow"] == ["get_issue", tool]
    # a grant on another mount counts too; a mount without githubApp auth grants nothing
    second = "  - {kind: git, repository: acme/o, mountPath: /o, ref: main, auth: AUTH}\n"
    both = text.replace("CAPS", short).replace("tools:", second + "tools:")
    granted = both.replace("AUTH", "{kind: githubApp, capabilities: " + enough + "}")
    tree.write("agents/a.yaml", BASE + granted)
    assert not [w for w in tree.compile().warnings if w.path.startswith("tools")]
    tree.write("agents/a.yaml", BASE + both.replace("AUTH", "{kind: none}"))
    find(tree.compile().warnings, "tools.0.allow.1", needs)


def test_setup_without_a_working_directory_warns(tree: Tree) -> None:
    setup = "  setup:\n    - {name: deps, commands: [npm ci]}\n"
    tree.write("agents/a.yaml", BASE + setup)
    result = tree.compile()
    assert result.ok
    warning = find(result.warnings, "environment.setup", "never runs for agent 'a'")
    assert "no working directory" in warning.message
    # an absolute workingDirectory or a mount gives setup a place to run
    tree.write("agents/a.yaml", BASE + setup + "workingDirectory: /srv\n")
    assert tree.compile().warnings == ()
    # an agent referring to the environment by name is warned about too
    tree.write("agents/b.yaml", "name: b\nharness: codex\nenvironment: runtime\n")
    assert [w.file for w in tree.compile().warnings] == [".auto/agents/b.yaml"]


def test_an_event_dependent_agent_without_triggers_warns(tree: Tree) -> None:
    mount = (
        "mounts:\n"
        "  - {kind: git, repository: o/r, mountPath: /w, ref: 'x{{payload.github.after}}'}\n"
    )
    tree.write("agents/a.yaml", BASE + mount)
    result = tree.compile()
    assert result.ok
    warning = find(result.warnings, "mounts.0.ref", "the agent has no triggers")
    assert (warning.file, warning.line) == (".auto/agents/a.yaml", 7)
    tree.write("agents/a.yaml", BASE + mount + "triggers:\n  - {event: push}\n")
    assert tree.compile().warnings == ()


def test_agent_names_are_unique_across_the_project(tree: Tree) -> None:
    tree.write("agents/a.yaml", BASE)
    tree.write("agents/b.yaml", "harness: codex\n" + BASE)
    error = find(tree.compile().errors, "name", "already used by .auto/agents/a.yaml")
    assert (error.file, error.line) == (".auto/agents/b.yaml", 2)


def test_required_secrets_must_be_declared(tree: Tree) -> None:
    tree.write(
        "agents/a.yaml",
        "name: a\nharness: codex\n"
        "environment:\n  name: e\n  image: {kind: preset, name: node24}\n"
        "  env: {ENV_SECRET: {$secret: env-secret}}\n"
        "env:\n  TOKEN: {$secret: token}\n  OPT: {$secret: maybe, optional: true}\n",
    )
    assert tree.compile().ok  # no declared names: nothing to check against
    assert tree.compile(secret_names={"token", "env-secret"}).ok
    result = tree.compile(secret_names={"other"})
    token = find(result.errors, "env.TOKEN.$secret", "secret 'token' is not declared")
    assert token.line == 8
    find(result.errors, "environment.env.ENV_SECRET.$secret", "'env-secret' is not declared")
    assert not any("maybe" in e.message for e in result.errors)


def test_stray_files_and_missing_directories(tree: Tree, tmp_path: Path) -> None:
    tree.write("agents/a.yaml", BASE)
    tree.write("agents/b.yml", BASE)
    tree.write("agents/notes.txt", "not yaml")
    tree.write("fragments/unused.yaml", "this: [is, not, imported")
    result = tree.compile()
    assert result.ok
    assert [a.name for a in result.agents] == ["a"]
    find(result.warnings, "(file)", "agent files end in .yaml")
    missing = compile_dir(tmp_path / "nope")
    assert not missing.ok
    assert "not a directory" in missing.errors[0].message
    empty = tmp_path / "empty"
    empty.mkdir()
    assert compile_dir(empty).agents == ()


def test_agents_are_sorted_by_file(tree: Tree) -> None:
    for name in ("zeta", "alpha", "mid"):
        tree.write(f"agents/{name}.yaml", f"name: {name}\nharness: codex\n" + ENV)
    assert [a.name for a in tree.compile().agents] == ["alpha", "mid", "zeta"]


@pytest.mark.parametrize(
    ("tool", "instead"),
    [
        ("run_workflow", "actions: write adds only the reruns"),
        ("cancel_workflow_run", "actions: write adds only the reruns"),
        ("actions_secret_write", "does not write Actions secrets"),
        ("list_workflows", "use actions_list (method list_workflows)"),
        ("get_pull_request_reviews", "use pull_request_read (method get_reviews)"),
    ],
)
def test_an_allowed_tool_hookspawn_cannot_execute_warns_with_what_to_use(
    tree: Tree, tool: str, instead: str
) -> None:
    caps = "{actions: write, secrets: write}"
    tree.write("agents/a.yaml", BASE + GITHUB_MOUNT.replace("CAPS", caps).replace("TOOL", tool))
    result = tree.compile()
    assert result.ok
    warning = find(result.warnings, "tools.0.allow.1", "no GitHub tool hookspawn executes")
    assert repr(tool) in warning.message and instead in warning.message
    assert warning.line == 14


def test_diagnostic_format() -> None:
    from agents import Diagnostic

    d = Diagnostic(".auto/agents/a.yaml", 3, "mounts.0.ref", "bad")
    assert str(d) == ".auto/agents/a.yaml:3: mounts.0.ref: bad"
    assert d.severity == "error"


def test_an_allowed_tool_the_broker_does_not_know_warns(tree: Tree) -> None:
    text = GITHUB_MOUNT.replace("CAPS", "{}").replace("TOOL", "get_isue")
    tree.write("agents/a.yaml", BASE + text)
    result = tree.compile()
    assert result.ok
    warning = find(result.warnings, "tools.0.allow.1", "no GitHub tool hookspawn executes")
    assert "'get_isue'" in warning.message and "unknown_tool" in warning.message
    caps = "{contents: write, pullRequests: write, issues: write}"
    tree.write(
        "agents/a.yaml", BASE + GITHUB_MOUNT.replace("CAPS", caps).replace("TOOL", "list_issues")
    )
    assert tree.compile().warnings == ()
