"""The GitHub tool arguments that become part of a REST path: what is refused, and how the
rest is encoded (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from agents.github_tool_arguments import (
    InvalidToolArgument,
    branch_segments,
    check_path_arguments,
    encoded_path,
    repository_path,
    workflow,
)


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("..", "has a '..' segment"),
        ("../pulls/1/merge", "has a '..' segment"),
        ("a/../../b", "has a '..' segment"),
        ("./a", "has a '.' segment"),
        ("a//b", "has an empty segment"),
        ("a/", "has an empty segment"),
        ("/etc/passwd", "starts with '/'"),
        ("a\\b", "contains a backslash"),
        ("a\x00b", "contains the control character U+0000"),
        ("a\u202eb", "contains the control character U+202E"),
        ("", "is empty"),
        (7, "must be a string"),
    ],
)
def test_a_path_that_could_leave_the_repository_is_refused(value: Any, why: str) -> None:
    with pytest.raises(InvalidToolArgument) as raised:
        repository_path(value, "path")
    assert raised.value.code == "invalid_argument"
    assert raised.value.message.startswith(f"argument 'path' ({value!r}) {why}")
    assert raised.value.details == {"argument": "path"}


def test_a_path_is_encoded_segment_by_segment() -> None:
    assert repository_path("docs/a b/readme.md", "path") == ("docs", "a b", "readme.md")
    assert encoded_path("contents", *repository_path("docs/a b/r.md", "p")) == (
        "/contents/docs/a%20b/r.md"
    )
    # what would end a segment, a path or the URL stays a character of its segment
    assert encoded_path("a?b=1", "c#d", "%2e%2e", "e%2Ff", "ü", 12) == (
        "/a%3Fb%3D1/c%23d/%252e%252e/e%252Ff/%C3%BC/12"
    )
    for bad in ("", ".", ".."):
        with pytest.raises(ValueError, match="cannot be a path segment"):
            encoded_path("x", bad)


def test_a_directory_may_end_with_a_slash_and_slash_alone_is_the_root() -> None:
    assert repository_path("/", "path", directory=True) == ()
    assert repository_path("src/", "path", directory=True) == ("src",)
    with pytest.raises(InvalidToolArgument, match="has an empty segment"):
        repository_path("src//", "path", directory=True)
    with pytest.raises(InvalidToolArgument, match="starts with '/'"):
        repository_path("/src", "path", directory=True)


def test_branches_follow_git_ref_rules() -> None:
    assert branch_segments("feature/a#1", "branch") == ("feature", "a#1")
    for bad in ("..", "a/../b", "a?b", "a\\b", "/a", "a//b", "-x", "a b", ""):
        with pytest.raises(InvalidToolArgument, match=r"^argument 'branch'"):
            branch_segments(bad, "branch")


def test_workflows_are_ids_or_file_names() -> None:
    assert workflow(12, "workflow_id") == 12
    assert workflow("12", "workflow_id") == 12
    assert workflow("ci.yml", "workflow_id") == "ci.yml"
    for bad in ("../ci.yml", "a/ci.yml", "a\\ci.yml", ".yml", "ci", "", 0, True, 1.5):
        with pytest.raises(InvalidToolArgument, match=r"^argument 'workflow_id'"):
            workflow(bad, "workflow_id")


def test_every_path_argument_of_a_call_is_checked() -> None:
    ok = {"owner": "acme", "repo": "widgets"}
    assert check_path_arguments("get_file_contents", ok) == "acme/widgets"
    assert check_path_arguments("create_branch", {**ok, "branch": "b"}) == "acme/widgets"
    refusals: list[tuple[str, dict[str, Any], str]] = [
        ("get_issue", {**ok, "issue_number": "1/../x"}, "issue_number"),
        ("create_branch", {**ok, "branch": "b", "from_branch": "../x"}, "from_branch"),
        ("push_files", {**ok, "branch": "b", "files": [{"path": "../x"}]}, "files[0].path"),
        ("list_workflow_runs", {**ok, "workflow_id": "../../x.yml"}, "workflow_id"),
        ("get_tag", {**ok, "tag": "../v1"}, "tag"),
        ("delete_file", {**ok, "path": "a/../../b", "branch": "main"}, "path"),
        ("rerun_failed_jobs", {**ok, "run_id": "1/../../x"}, "run_id"),
        ("pull_request_read", {**ok, "method": "get", "pullNumber": 0}, "pullNumber"),
        ("pull_request_read", {**ok, "method": "merge", "pullNumber": 1}, "method"),
        ("issue_read", {**ok, "issue_number": 1}, "method"),
        (
            "actions_list",
            {**ok, "method": "list_workflow_runs", "resource_id": "../x"},
            "resource_id",
        ),
        (
            "actions_get",
            {**ok, "method": "get_workflow_run", "resource_id": "1/../x"},
            "resource_id",
        ),
        ("list_branches", {**ok, "owner": ".."}, "owner"),
        ("list_branches", {**ok, "repo": "w/x"}, "repo"),
    ]
    for tool, arguments, name in refusals:
        with pytest.raises(InvalidToolArgument) as raised:
            check_path_arguments(tool, arguments)
        assert raised.value.details["argument"] == name, tool
    # a method the tool executes, or one no capability grants (the gate refuses that one),
    # passes; an Actions resource id comes as the GitHub MCP server sends it, a string
    run = {**ok, "method": "get_workflow_run", "resource_id": "12"}
    assert check_path_arguments("actions_get", run) == "acme/widgets"
    started = {**ok, "method": "run_workflow", "workflow_id": "ci.yml", "ref": "main"}
    assert check_path_arguments("actions_run_trigger", started) == "acme/widgets"
    with pytest.raises(InvalidToolArgument, match="one of get, get_diff"):
        check_path_arguments("pull_request_read", {**ok, "method": "x", "pullNumber": 1})
