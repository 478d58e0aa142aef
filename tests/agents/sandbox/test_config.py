"""The sandbox configuration's rules (the sandbox seed's "Mounts"), each with the field it names."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from agents.sandbox.config import (
    HostPaths,
    Problem,
    SandboxConfig,
    SandboxMount,
    validate,
    warnings,
)

HOST = HostPaths(host_home="/home/op", data_dir="/var/lib/hookspawn")

#: the seed's three examples, as written there
SRT_CACHE: dict[str, Any] = {
    "sandbox": {
        "backend": "srt",
        "mounts": [
            {
                "source": "/srv/agent-cache/pnpm",
                "target": "/srv/agent-cache/pnpm",
                "mode": "writable",
            }
        ],
        "env": {"PNPM_CONFIG_STORE_DIR": "/srv/agent-cache/pnpm"},
    }
}
MICROSANDBOX_REFERENCE: dict[str, Any] = {
    "sandbox": {
        "backend": "microsandbox",
        "mounts": [{"source": "/srv/reference-data", "target": "/reference", "mode": "readonly"}],
    }
}
MICROSANDBOX_OVERLAY: dict[str, Any] = {
    "sandbox": {
        "backend": "microsandbox",
        "mounts": [
            {
                "source": "/srv/agent-cache/pnpm",
                "target": "~/.local/share/pnpm/store",
                "mode": "overlay",
            }
        ],
        "env": {"PNPM_CONFIG_STORE_DIR": "${HOME}/.local/share/pnpm/store"},
    }
}
SEED_EXAMPLES = [SRT_CACHE, MICROSANDBOX_REFERENCE, MICROSANDBOX_OVERLAY]


def valid(raw: object) -> SandboxConfig:
    config, problems = validate(raw, host=HOST)
    assert problems == []
    assert config is not None
    return config


def problems(raw: object) -> list[tuple[str, str]]:
    config, found = validate(raw, host=HOST)
    assert config is None
    assert found
    return [(p.field, p.message) for p in found]


def only(raw: object) -> tuple[str, str]:
    found = problems(raw)
    assert len(found) == 1, found
    return found[0]


def config(backend: str, *mounts: dict[str, Any], env: object = None) -> dict[str, Any]:
    sandbox: dict[str, Any] = {"backend": backend, "mounts": list(mounts)}
    if env is not None:
        sandbox["env"] = env
    return {"sandbox": sandbox}


def mount(source: str, target: str | None = None, mode: str = "readonly") -> dict[str, Any]:
    return {"source": source, "target": source if target is None else target, "mode": mode}


class TestSeedExamples:
    def test_the_srt_cache_shares_one_host_path_writable(self) -> None:
        got = valid(SRT_CACHE)
        assert got.backend == "srt"
        assert got.mounts == (
            SandboxMount("/srv/agent-cache/pnpm", "/srv/agent-cache/pnpm", "writable"),
        )
        assert got.env == {"PNPM_CONFIG_STORE_DIR": "/srv/agent-cache/pnpm"}

    def test_microsandbox_maps_a_host_directory_to_another_path(self) -> None:
        got = valid(MICROSANDBOX_REFERENCE)
        assert got.mounts == (SandboxMount("/srv/reference-data", "/reference", "readonly"),)
        assert got.env == {}

    def test_the_overlay_target_expands_to_the_runtime_home_and_env_stays_literal(self) -> None:
        got = valid(MICROSANDBOX_OVERLAY)
        assert got.mounts == (
            SandboxMount("/srv/agent-cache/pnpm", "/home/user/.local/share/pnpm/store", "overlay"),
        )
        assert got.env == {"PNPM_CONFIG_STORE_DIR": "${HOME}/.local/share/pnpm/store"}

    def test_the_srt_example_with_microsandbox_is_valid_and_the_reverse_is_not(self) -> None:
        swapped = copy.deepcopy(SRT_CACHE)
        swapped["sandbox"]["backend"] = "microsandbox"
        valid(swapped)
        field, message = only(config("srt", mount("/srv/reference-data", "/reference")))
        assert field == "sandbox.mounts[0].target"
        assert "srt" in message and "same path" in message


class TestPaths:
    def test_a_relative_source_or_target_is_refused(self) -> None:
        assert problems(config("microsandbox", mount("srv/data", "reference"))) == [
            ("sandbox.mounts[0].source", "'srv/data' is not absolute (after ~ expansion)"),
            ("sandbox.mounts[0].target", "'reference' is not absolute (after ~ expansion)"),
        ]

    def test_tilde_is_the_host_home_for_sources_and_srt_targets(self) -> None:
        got = valid(config("srt", mount("~/cache", "/home/op/cache", "writable")))
        assert got.mounts[0].source == got.mounts[0].target == "/home/op/cache"

    def test_a_bare_tilde_is_the_home_itself(self) -> None:
        # the whole host home holds its keys, so sharing it is refused, naming the home
        field, message = only(config("microsandbox", mount("~", "/op-home")))
        assert field == "sandbox.mounts[0].source"
        assert message.startswith("/home/op overlaps /home/op/.ssh")

    def test_only_tilde_and_tilde_slash_expand(self) -> None:
        field, message = only(config("microsandbox", mount("~op/cache", "/cache")))
        assert field == "sandbox.mounts[0].source"
        assert "only ~ and ~/" in message

    def test_srt_compares_paths_after_resolution(self) -> None:
        got = valid(config("srt", mount("/srv/a/../cache/", "/srv/cache")))
        assert got.mounts[0].source == got.mounts[0].target == "/srv/cache"

    def test_paths_must_be_non_empty_strings(self) -> None:
        found = problems(config("srt", {"source": "", "target": 3, "mode": "readonly"}))
        assert found == [
            ("sandbox.mounts[0].source", "must be a non-empty path string"),
            ("sandbox.mounts[0].target", "must be a non-empty path string"),
        ]


class TestAddOnlyForSrt:
    def test_a_readonly_mount_inside_a_writable_one_is_valid_with_a_warning(self) -> None:
        got = valid(
            config(
                "srt",
                mount("/srv", mode="writable"),
                mount("/srv/cache", mode="writable"),
                mount("/srv/cache/ro"),
            )
        )
        ((field, message),) = [(w.field, w.message) for w in warnings(got)]
        assert field == "sandbox.mounts[2].mode"
        # the innermost writable mount around it, and both paths
        assert "readonly /srv/cache/ro lies inside the writable sandbox.mounts[1] (/srv/cache)" in (
            message
        )
        assert "srt mounts only add access, so it stays writable" in message

    def test_nothing_else_warns(self) -> None:
        for raw in (
            *SEED_EXAMPLES,
            config("srt", mount("/srv/a", mode="writable"), mount("/srv/b")),
        ):
            assert warnings(valid(raw)) == []
        nested = config("microsandbox", mount("/srv/c", mode="writable"), mount("/srv/c/ro"))
        assert warnings(valid(nested)) == []  # a VM mount takes its own mode

    def test_a_readonly_mount_of_the_workspace_says_it_cannot_take_write_access_away(
        self,
    ) -> None:
        field, message = only(config("srt", mount("/var/lib/hookspawn/workspaces/s1/workspace")))
        assert field == "sandbox.mounts[0].mode"
        assert "cannot take write access away from the workspace" in message

    def test_a_writable_mount_inside_a_readonly_one_keeps_its_own_mode(self) -> None:
        got = valid(config("srt", mount("/srv/data"), mount("/srv/data/out", mode="writable")))
        assert [m.mode for m in got.mounts] == ["readonly", "writable"]

    def test_microsandbox_nests_either_way_each_keeping_its_mode(self) -> None:
        got = valid(
            config(
                "microsandbox",
                mount("/srv/data", "/data", "writable"),
                mount("/srv/frozen", "/data/frozen", "readonly"),
            )
        )
        assert [m.mode for m in got.mounts] == ["writable", "readonly"]


class TestProtectedPaths:
    @pytest.mark.parametrize(
        "target",
        [
            "/workspace",
            "/workspace/w",
            "/home/user",
            "/home",
            "/",
            "~",
            "~/.ssh",
            "~/.ssh/keys",
            "~/.config",
            "~/.gitconfig",
            "/proc",
        ],
    )
    def test_a_microsandbox_target_cannot_replace_a_runtime_path(self, target: str) -> None:
        field, message = only(config("microsandbox", mount("/srv/x", target)))
        assert field == "sandbox.mounts[0].target"
        assert message.endswith("mounts cannot replace protected runtime paths")

    def test_a_microsandbox_target_inside_the_runtime_home_is_allowed(self) -> None:
        valid(config("microsandbox", mount("/srv/x", "~/.cache/tool", "writable")))

    @pytest.mark.parametrize(
        "path", ["/var/lib/hookspawn", "/var/lib/hookspawn/redis", "/var", "/home/op/.ssh", "/"]
    )
    def test_srt_cannot_share_the_data_directory_or_the_host_homes_keys(self, path: str) -> None:
        field, message = only(config("srt", mount(path, mode="writable")))
        assert field == "sandbox.mounts[0].target"
        assert "mounts cannot replace protected runtime paths" in message

    def test_a_microsandbox_source_cannot_share_the_data_directory(self) -> None:
        field, message = only(config("microsandbox", mount("/var/lib/hookspawn", "/data")))
        assert field == "sandbox.mounts[0].source"
        assert "/var/lib/hookspawn, the data directory" in message


class TestTargets:
    def test_two_sources_cannot_map_to_one_target(self) -> None:
        field, message = only(
            config("microsandbox", mount("/srv/a", "/data"), mount("/srv/b", "/data"))
        )
        assert field == "sandbox.mounts[1].target"
        assert message == (
            "/data is already the target of sandbox.mounts[0]: "
            "different sources cannot map to the same target"
        )

    def test_the_same_mount_twice_is_named_as_such(self) -> None:
        field, message = only(config("srt", mount("/srv/a"), mount("/srv/a/")))
        assert field == "sandbox.mounts[1].target"
        assert message.endswith("the same mount is listed twice")


class TestOverlay:
    def test_srt_refuses_overlay_and_names_the_backend_that_has_it(self) -> None:
        field, message = only(config("srt", mount("/srv/cache", mode="overlay")))
        assert field == "sandbox.mounts[0].mode"
        assert message == (
            "srt cannot overlay: use readonly or writable (overlay needs microsandbox)"
        )

    @pytest.mark.parametrize("other", ["/cache", "/cache/inner", "/cache/x/y"])
    def test_an_overlay_target_overlaps_no_other_mount(self, other: str) -> None:
        found = problems(
            config(
                "microsandbox",
                mount("/srv/cache", "/cache", "overlay"),
                mount("/srv/other", other),
            )
        )
        assert "sandbox.mounts[0].target" in [f for f, _ in found]
        assert any("overlay targets cannot overlap other mounts" in m for _, m in found)

    def test_an_overlay_beside_other_mounts_is_fine(self) -> None:
        valid(
            config(
                "microsandbox",
                mount("/srv/cache", "/cache", "overlay"),
                mount("/srv/other", "/cache-two"),
            )
        )


class TestEnv:
    @pytest.mark.parametrize(
        "name",
        [
            "HOME",
            "XDG_CONFIG_HOME",
            "XDG_DATA_HOME",
            "HTTPS_PROXY",
            "http_proxy",
            "NO_PROXY",
            "GIT_SSH_COMMAND",
            "GIT_CONFIG_COUNT",
            "HOOKSPAWN_SESSION_CREDENTIAL",
            "SSL_CERT_FILE",
            "TMPDIR",
        ],
    )
    def test_the_runtimes_own_variables_cannot_be_overridden(self, name: str) -> None:
        field, message = only(config("srt", env={name: "x"}))
        assert field == f"sandbox.env.{name}"
        assert "sandbox.env cannot override it" in message

    def test_values_are_literal_strings(self) -> None:
        got = valid(config("srt", env={"A": "$HOME/x", "B": "${HOME}", "C": "~/y"}))
        assert got.env == {"A": "$HOME/x", "B": "${HOME}", "C": "~/y"}
        field, message = only(config("srt", env={"N": 3}))
        assert (field, message) == (
            "sandbox.env.N",
            "must be a string (values are taken literally)",
        )

    def test_names_must_be_variable_names(self) -> None:
        assert only(config("srt", env={"A-B": "x"})) == (
            "sandbox.env.A-B",
            "not an environment variable name",
        )
        assert only(config("srt", env=["A=b"]))[0] == "sandbox.env"


class TestShape:
    def test_backend_is_required_and_known(self) -> None:
        assert only({"sandbox": {"mounts": []}})[0] == "sandbox.backend"
        field, message = only(config("docker"))
        assert field == "sandbox.backend"
        assert message.startswith("'docker': unknown: srt or microsandbox")

    def test_backend_none_is_explicit_and_takes_no_mounts(self) -> None:
        assert valid(config("none")).backend == "none"
        assert only(config("none", mount("/srv/a")))[0] == "sandbox.mounts[0]"

    def test_mode_is_required_and_one_of_three(self) -> None:
        assert only(config("srt", {"source": "/a", "target": "/a"})) == (
            "sandbox.mounts[0].mode",
            "required: readonly, writable or overlay",
        )
        assert only(config("srt", mount("/a", mode="rw")))[0] == "sandbox.mounts[0].mode"

    def test_the_legacy_fields_point_at_migrate(self) -> None:
        raw = {**config("srt"), "security": {"sandboxReadRoots": ["/a"], "other": True}}
        field, message = only(raw)
        assert field == "security.sandboxReadRoots"
        assert "hookspawn sandbox migrate" in message
        field, message = only(config("srt", {"source": "/a", "target": "/a", "readOnly": True}))
        assert field == "sandbox.mounts[0].readOnly"
        assert "use mode" in message

    def test_unknown_fields_and_wrong_shapes_are_named(self) -> None:
        assert only(config("srt", {**mount("/a"), "size": 1}))[0] == "sandbox.mounts[0].size"
        assert only({"sandbox": {"backend": "srt", "volumes": []}})[0] == "sandbox.volumes"
        assert only({"sandbox": {"backend": "srt", "mounts": {}}})[0] == "sandbox.mounts"
        assert only(config("srt", "/a"))[0] == "sandbox.mounts[0]"  # type: ignore[arg-type]
        assert only({"other": 1})[0] == "sandbox"
        assert only([])[0] == "(document)"

    def test_every_problem_is_reported_in_field_order(self) -> None:
        raw = config(
            "srt",
            mount("/srv/x", "/srv/y", "overlay"),
            mount("rel"),
            env={"HOME": "/x"},
        )
        raw["security"] = {"sandboxWriteRoots": ["/b"]}
        fields = [field for field, _ in problems(raw)]
        assert fields == [
            "security.sandboxWriteRoots",
            "sandbox.mounts[0].target",
            "sandbox.mounts[0].mode",
            "sandbox.mounts[1].source",
            "sandbox.mounts[1].target",
            "sandbox.env.HOME",
        ]

    def test_a_problem_line_names_the_file_the_entry_and_the_rule(self) -> None:
        line = Problem("sandbox.mounts[2].source", "why").line("conf/sandbox.json")
        assert line == "conf/sandbox.json: sandbox.mounts[2].source: why"
