"""hookspawn's variables in the harness command's words."""

from __future__ import annotations

from workers.session.runner.harness_args import expand_harness_args


def test_hookspawn_references_are_replaced_and_nothing_else() -> None:
    env = {"HOOKSPAWN_MCP_CONFIG": "/s/.hookspawn/mcp.json", "HOME": "/home/user"}
    argv = ["claude", "-p", "--mcp-config", "$HOOKSPAWN_MCP_CONFIG", "x=${HOOKSPAWN_MCP_CONFIG}!"]
    assert expand_harness_args([*argv, "$HOME", "$HOOKSPAWN_UNSET", "$1", "a$b"], env) == [
        "claude",
        "-p",
        "--mcp-config",
        "/s/.hookspawn/mcp.json",
        "x=/s/.hookspawn/mcp.json!",
        "$HOME",
        "",
        "$1",
        "a$b",
    ]
