"""Mount rules: repository forms, paths, refs, depth, auth, capabilities, working directory."""

from __future__ import annotations

import pytest

from agents import Capabilities
from agents.mounts import github_repository
from tests.agents.conftest import Tree, find

MOUNT = """\
mounts:
  - kind: git
    repository: acme/widgets
    mountPath: /workspace/widgets
    ref: main
"""


def test_defaults_for_a_minimal_mount(tree: Tree) -> None:
    agent = tree.agent(MOUNT)
    (mount,) = agent.mounts
    assert mount.kind == "git"
    assert mount.repository == "acme/widgets"
    assert mount.github_repository == "acme/widgets"
    assert mount.depth == 1
    assert mount.auth.kind == "none"
    assert mount.auth.capabilities == Capabilities()
    assert mount.ref == "main"
    assert mount.ref_template is not None and not mount.ref_template.tokens
    assert not agent.event_dependent
    assert agent.working_directory == "/workspace/widgets"


def test_templated_ref_makes_the_agent_event_dependent(tree: Tree) -> None:
    agent = tree.agent(
        MOUNT.replace("ref: main", "ref: refs/pull/{{payload.github.pullRequest.number}}/head")
    )
    assert agent.event_dependent
    assert agent.event_dependent_mounts == agent.mounts
    template = agent.mounts[0].ref_template
    assert template is not None
    assert [t.path for t in template.tokens] == [("payload", "github", "pullRequest", "number")]


@pytest.mark.parametrize(
    ("repository", "expected"),
    [
        ("acme/widgets", "acme/widgets"),
        ("https://github.com/acme/widgets", "acme/widgets"),
        ("https://github.com/acme/widgets.git", "acme/widgets"),
        ("git@github.com:acme/widgets.git", "acme/widgets"),
        ("git@github.com:acme/widgets", "acme/widgets"),
        ("https://gitlab.com/acme/widgets.git", None),
        ("git@example.org:team/tool.git", None),
    ],
)
def test_repository_forms(tree: Tree, repository: str, expected: str | None) -> None:
    assert github_repository(repository) == expected
    agent = tree.agent(MOUNT.replace("acme/widgets", repository))
    assert agent.mounts[0].repository == repository
    assert agent.mounts[0].github_repository == expected


def test_github_app_auth_with_every_field(tree: Tree) -> None:
    agent = tree.agent(
        MOUNT
        + """\
    depth: 50
    auth:
      kind: githubApp
      installationId: "12345"
      commitAuthor: {name: Bot, email: bot@acme.dev}
      capabilities: {contents: read, merge: none, secrets: read}
"""
    )
    auth = agent.mounts[0].auth
    assert agent.mounts[0].depth == 50
    assert auth.kind == "githubApp"
    assert auth.installation_id == "12345"
    assert auth.commit_author == {"name": "Bot", "email": "bot@acme.dev"}
    # Each capability left out keeps its own default.
    assert auth.capabilities == Capabilities(contents="read", secrets="read")
    assert auth.capabilities.pull_requests == "write"
    assert auth.capabilities.checks == "read"


def test_capability_json_is_camel_case(tree: Tree) -> None:
    agent = tree.agent(MOUNT + "    auth: {kind: githubApp}\n")
    body = agent.mounts[0].to_json()
    assert body["auth"]["capabilities"]["pullRequests"] == "write"
    assert body["mountPath"] == "/workspace/widgets"
    assert "name" not in body


def test_merge_write_with_contents_and_pull_requests_write_is_accepted(tree: Tree) -> None:
    agent = tree.agent(MOUNT + "    auth: {kind: githubApp, capabilities: {merge: write}}\n")
    assert agent.mounts[0].auth.capabilities.merge == "write"


def test_token_permissions_follow_spec_8() -> None:
    caps = Capabilities(contents="read", issues="none", workflows="write", merge="write")
    assert caps.token_permissions() == {
        "contents": "read",
        "pull_requests": "write",
        "checks": "read",
        "actions": "read",
        "workflows": "write",
        "metadata": "read",
    }
    assert "workflows" not in Capabilities(workflows="read").token_permissions()
    assert Capabilities(secrets="read").token_permissions()["secrets"] == "read"
    assert caps.git_permissions() == {"contents": "read", "workflows": "write", "metadata": "read"}
    assert Capabilities().git_permissions() == {"contents": "write", "metadata": "read"}
    assert Capabilities(contents="none").git_permissions() is None


def test_warnings_for_missing_ref_and_workflows_read(tree: Tree) -> None:
    tree.write(
        "agents/a.yaml",
        """\
name: a
harness: codex
environment: {name: e, image: {kind: preset, name: default}}
mounts:
  - kind: git
    repository: acme/widgets
    mountPath: /w
    auth:
      kind: githubApp
      capabilities:
        workflows: read
""",
    )
    result = tree.compile()
    assert result.ok
    ref = find(result.warnings, "mounts.0.ref", "set ref explicitly")
    assert ref.line == 5
    workflows = find(result.warnings, "mounts.0.auth.capabilities.workflows", "grants nothing")
    assert workflows.line == 11


# (extra mount lines or replacement, field path, message fragment)
NEGATIVE = [
    ("kind: git", "kind: svn", "mounts.0.kind", "must be one of git"),
    ("    repository: acme/widgets\n", "", "mounts.0.repository", "required field"),
    ("acme/widgets", "not a repo", "mounts.0.repository", "is not a repository"),
    ("acme/widgets", "ftp://x/y", "mounts.0.repository", "is not a repository"),
    ("/workspace/widgets", "workspace/widgets", "mounts.0.mountPath", "absolute"),
    ("/workspace/widgets", "/workspace/../etc", "mounts.0.mountPath", "'..'"),
    ("ref: main", "ref: main..x", "mounts.0.ref", "not a valid git ref"),
    ("ref: main", "ref: -main", "mounts.0.ref", "not a valid git ref"),
    ("ref: main", "ref: refs/pull/{{github.number}}/head", "mounts.0.ref", "template error"),
    ("ref: main", "ref: 7", "mounts.0.ref", "must be a string"),
    ("ref: main", "ref: main\n    depth: 0", "mounts.0.depth", "at least 1"),
    ("ref: main", "ref: main\n    depth: '3'", "mounts.0.depth", "must be an integer"),
    ("ref: main", "ref: main\n    branch: x", "mounts.0.branch", "unknown key 'branch'"),
    ("ref: main", "ref: main\n    auth: {kind: ssh}", "mounts.0.auth.kind", "none | githubApp"),
    ("ref: main", "ref: main\n    auth: {}", "mounts.0.auth.kind", "required field"),
    ("ref: main", "ref: main\n    auth: none", "mounts.0.auth", "expected a mapping"),
    (
        "ref: main",
        "ref: main\n    auth: {kind: none, capabilities: {contents: read}}",
        "mounts.0.auth.capabilities",
        "unknown key",
    ),
    (
        "ref: main",
        "ref: main\n    auth: {kind: githubApp, installationId: 42}",
        "mounts.0.auth.installationId",
        "must be a string",
    ),
    (
        "ref: main",
        "ref: main\n    auth: {kind: githubApp, commitAuthor: {name: B, email: nobody}}",
        "mounts.0.auth.commitAuthor.email",
        "containing @",
    ),
    (
        "ref: main",
        "ref: main\n    auth: {kind: githubApp, commitAuthor: {email: a@b}}",
        "mounts.0.auth.commitAuthor.name",
        "required field",
    ),
    (
        "ref: main",
        "ref: main\n    auth: {kind: githubApp, capabilities: {contents: admin}}",
        "mounts.0.auth.capabilities.contents",
        "none | read | write",
    ),
    (
        "ref: main",
        "ref: main\n    auth: {kind: githubApp, capabilities: {merge: read}}",
        "mounts.0.auth.capabilities.merge",
        "none | write",
    ),
    (
        "ref: main",
        "ref: main\n    auth: {kind: githubApp, capabilities: {merge: write, contents: read}}",
        "mounts.0.auth.capabilities.merge",
        "needs contents: write and pullRequests: write",
    ),
    (
        "ref: main",
        "ref: main\n    auth: {kind: githubApp, capabilities: {merge: write, pullRequests: read}}",
        "mounts.0.auth.capabilities.merge",
        "needs contents: write and pullRequests: write",
    ),
    (
        "ref: main",
        "ref: main\n    auth: {kind: githubApp, capabilities: {deploy: write}}",
        "mounts.0.auth.capabilities.deploy",
        "unknown key 'deploy'",
    ),
    (
        "acme/widgets",
        "https://github.com/acme/widgets.git\n    auth: {kind: githubApp}",
        "mounts.0.repository",
        "write it as acme/widgets",
    ),
]


@pytest.mark.parametrize(("old", "new", "path", "fragment"), NEGATIVE)
def test_mount_rule_violations(tree: Tree, old: str, new: str, path: str, fragment: str) -> None:
    errors = tree.errors(MOUNT.replace(old, new, 1))
    find(errors, path, fragment)


def test_mounts_must_be_a_list_and_paths_unique(tree: Tree) -> None:
    find(tree.errors("mounts: {kind: git}\n"), "mounts", "must be a list")
    errors = tree.errors(MOUNT + MOUNT.replace("mounts:\n", "").replace("acme/widgets", "acme/b"))
    error = find(errors, "mounts.1.mountPath", "already the mountPath of mounts.0")
    assert error.line == 13


def _second_mount(path: str) -> str:
    return MOUNT + f"  - {{kind: git, repository: acme/b, mountPath: '{path}', ref: main}}\n"


@pytest.mark.parametrize(
    ("written", "normal"),
    [
        ("/workspace/widgets/", "/workspace/widgets"),
        ("//workspace//widgets", "/workspace/widgets"),
        ("/workspace/./widgets/.", "/workspace/widgets"),
    ],
)
def test_mount_paths_are_normalised(tree: Tree, written: str, normal: str) -> None:
    agent = tree.agent(MOUNT.replace("/workspace/widgets", written))
    assert agent.mounts[0].mount_path == normal
    assert agent.working_directory == normal


@pytest.mark.parametrize(
    "spelling", ["/workspace/widgets/", "/workspace//widgets", "/workspace/./widgets"]
)
def test_mount_paths_compare_after_normalising(tree: Tree, spelling: str) -> None:
    errors = tree.errors(_second_mount(spelling))
    find(errors, "mounts.1.mountPath", "/workspace/widgets is already the mountPath of mounts.0")


@pytest.mark.parametrize("root", ["/", "//", "/./", "/."])
def test_the_sandbox_root_is_no_mount_path(tree: Tree, root: str) -> None:
    errors = tree.errors(MOUNT.replace("/workspace/widgets", root))
    find(errors, "mounts.0.mountPath", "is the sandbox root")


def test_nested_mount_paths_are_refused_naming_both(tree: Tree) -> None:
    inner = tree.errors(_second_mount("/workspace/widgets/sub/"))
    error = find(inner, "mounts.1.mountPath", "/workspace/widgets/sub is inside /workspace/widgets")
    assert "mounts.0" in error.message
    outer = tree.errors(_second_mount("/workspace"))
    error = find(outer, "mounts.1.mountPath", "/workspace/widgets, the mountPath of mounts.0")
    assert "is inside /workspace" in error.message
    # a shared prefix that is not a parent directory is fine
    assert len(tree.agent(_second_mount("/workspace/widgets2")).mounts) == 2


@pytest.mark.parametrize(
    ("repository", "url"),
    [
        ("acme/widgets", "https://github.com/acme/widgets.git"),
        ("https://github.com/acme/widgets", "https://github.com/acme/widgets"),
        ("https://gitlab.com/acme/widgets.git", "https://gitlab.com/acme/widgets.git"),
        ("git@github.com:Codertocat/Hello-World.git", "git@github.com:Codertocat/Hello-World.git"),
        ("git@example.org:team/tool.git", "git@example.org:team/tool.git"),
    ],
)
def test_url_is_the_address_as_the_seed_resolves_it(tree: Tree, repository: str, url: str) -> None:
    (mount,) = tree.agent(MOUNT.replace("acme/widgets", repository)).mounts
    assert mount.url == url
    assert mount.to_json()["url"] == url


def test_exact_location_of_a_capability_error(tree: Tree) -> None:
    errors = tree.errors(
        MOUNT
        + """\
    auth:
      kind: githubApp
      capabilities:
        contents: read
        merge: write
"""
    )
    error = find(errors, "mounts.0.auth.capabilities.merge", "needs contents: write")
    assert str(error).startswith(".auto/agents/a.yaml:15: mounts.0.auth.capabilities.merge: ")


@pytest.mark.parametrize(
    ("working_directory", "expected"),
    [
        (None, "/workspace/widgets"),
        ("packages/core", "/workspace/widgets/packages/core"),
        ("./src/../lib", "/workspace/widgets/lib"),
        (".", "/workspace/widgets"),
        ("/tmp/scratch", "/tmp/scratch"),
    ],
)
def test_working_directory_resolution(
    tree: Tree, working_directory: str | None, expected: str
) -> None:
    extra = f"workingDirectory: {working_directory}\n" if working_directory else ""
    assert tree.agent(MOUNT + extra).working_directory == expected


def test_working_directory_without_mounts(tree: Tree) -> None:
    assert tree.agent("").working_directory is None
    assert tree.agent("workingDirectory: /srv\n").working_directory == "/srv"


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (MOUNT + "workingDirectory: ../elsewhere\n", "escapes the first mount"),
        (MOUNT + "workingDirectory: a/../../x\n", "escapes the first mount"),
        ("workingDirectory: src\n", "needs a mount"),
        ("workingDirectory: 3\n", "must be a string"),
    ],
)
def test_working_directory_violations(tree: Tree, extra: str, fragment: str) -> None:
    find(tree.errors(extra), "workingDirectory", fragment)
