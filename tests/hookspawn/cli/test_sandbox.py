"""`hookspawn sandbox check|migrate`: exit codes, one line per problem, stdout/stderr, --write."""

from __future__ import annotations

import copy
import io
import json
import os
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hookspawn.cli import main
from tests.agents.sandbox.test_config import (
    MICROSANDBOX_OVERLAY,
    MICROSANDBOX_REFERENCE,
    SRT_CACHE,
)


@pytest.fixture(autouse=True)
def _no_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if name.startswith("HOOKSPAWN_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOOKSPAWN_DATA_DIR", str(tmp_path / "data"))


@dataclass
class Done:
    returncode: int
    stdout: str
    stderr: str


def hookspawn(*args: str) -> Done:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse's own refusals (usage errors: 2)
            code = int(exc.code or 0)
    return Done(code, out.getvalue(), err.getvalue())


def write(path: Path, doc: object) -> Path:
    path.write_text(json.dumps(doc, indent=2) + "\n")
    return path


def on_host(example: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    """A seed example whose host paths (`/srv/…`) are moved under tmp_path and created there."""
    doc = copy.deepcopy(example)
    for mount in doc["sandbox"]["mounts"]:
        mount["source"] = str(tmp_path / mount["source"].lstrip("/"))
        Path(mount["source"]).mkdir(parents=True, exist_ok=True)
        if doc["sandbox"]["backend"] == "srt":
            mount["target"] = mount["source"]
    return doc


class TestCheck:
    @pytest.mark.parametrize("example", [SRT_CACHE, MICROSANDBOX_REFERENCE, MICROSANDBOX_OVERLAY])
    def test_each_seed_example_is_valid_once_its_sources_exist(
        self, example: dict[str, Any], tmp_path: Path
    ) -> None:
        path = write(tmp_path / "sandbox.json", on_host(example, tmp_path))
        done = hookspawn("sandbox", "check", str(path))
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")

    def test_a_seed_example_on_a_host_without_its_source_says_which(self, tmp_path: Path) -> None:
        path = write(tmp_path / "sandbox.json", SRT_CACHE)
        done = hookspawn("sandbox", "check", str(path))
        assert done.returncode == 1
        assert done.stdout == (
            f"{path}: sandbox.mounts[0].source: /srv/agent-cache/pnpm does not exist on this host\n"
        )

    def test_one_line_per_problem_each_naming_the_file_the_entry_and_the_rule(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        doc = {
            "sandbox": {
                "backend": "srt",
                "mounts": [
                    {"source": f"{tmp_path}/x", "target": "/srv/y", "mode": "writable"},
                    {"source": f"{tmp_path}/c", "target": f"{tmp_path}/c", "mode": "overlay"},
                    {"source": "cache", "target": "/srv/c", "mode": "readonly"},
                ],
                "env": {"HOME": "/elsewhere"},
            }
        }
        monkeypatch.chdir(tmp_path)
        write(tmp_path / "s.json", doc)
        done = hookspawn("sandbox", "check", "s.json")
        assert done.returncode == 1
        lines = done.stdout.splitlines()
        # the rules and the host's answers together, each mount's in the order of the file
        assert [line.split(": ", 2)[:2] for line in lines] == [
            ["s.json", "sandbox.mounts[0].target"],
            ["s.json", "sandbox.mounts[0].source"],
            ["s.json", "sandbox.mounts[1].mode"],
            ["s.json", "sandbox.mounts[1].source"],
            ["s.json", "sandbox.mounts[2].source"],
            ["s.json", "sandbox.env.HOME"],
        ]
        assert (
            lines[1]
            == f"s.json: sandbox.mounts[0].source: {tmp_path}/x does not exist on this host"
        )
        assert lines[2] == (
            "s.json: sandbox.mounts[1].mode: "
            "srt cannot overlay: use readonly or writable (overlay needs microsandbox)"
        )
        assert lines[4] == (
            "s.json: sandbox.mounts[2].source: 'cache' is not absolute (after ~ expansion)"
        )

    def test_an_overlay_source_must_be_a_directory(self, tmp_path: Path) -> None:
        (tmp_path / "cache").write_text("a file")
        doc = {
            "sandbox": {
                "backend": "microsandbox",
                "mounts": [{"source": str(tmp_path / "cache"), "target": "/c", "mode": "overlay"}],
            }
        }
        path = write(tmp_path / "s.json", doc)
        done = hookspawn("sandbox", "check", str(path))
        assert done.returncode == 1
        assert done.stdout == (
            f"{path}: sandbox.mounts[0].source: {tmp_path / 'cache'}: "
            "an overlay source must be a directory\n"
        )

    def test_a_source_that_leads_into_the_data_directory_is_not_shared(
        self, tmp_path: Path
    ) -> None:
        (tmp_path / "data" / "workspaces").mkdir(parents=True)
        (tmp_path / "innocent").symlink_to(tmp_path / "data" / "workspaces")
        doc = {"sandbox": {"backend": "srt", "mounts": [
            {"source": str(tmp_path / "innocent"), "target": str(tmp_path / "innocent"),
             "mode": "readonly"}]}}  # fmt: skip
        done = hookspawn("sandbox", "check", str(write(tmp_path / "s.json", doc)))
        assert done.returncode == 1
        assert f"leads to {tmp_path / 'data' / 'workspaces'}, which is {tmp_path / 'data'}" in (
            done.stdout
        )

    def test_the_mount_of_the_data_directory_is_refused_as_configured_by_the_environment(
        self, tmp_path: Path
    ) -> None:
        (tmp_path / "data").mkdir()
        doc = {"sandbox": {"backend": "srt", "mounts": [
            {"source": str(tmp_path), "target": str(tmp_path), "mode": "writable"}]}}  # fmt: skip
        done = hookspawn("sandbox", "check", str(write(tmp_path / "s.json", doc)))
        assert done.returncode == 1
        assert f"overlaps {tmp_path / 'data'}, the data directory" in done.stdout

    def test_config_defaults_to_hookspawn_sandbox_config(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        path = write(tmp_path / "s.json", {"sandbox": {"backend": "srt"}})
        monkeypatch.setenv("HOOKSPAWN_SANDBOX_CONFIG", str(path))
        assert hookspawn("sandbox", "check").returncode == 0
        write(path, {"sandbox": {"backend": "lxc"}})
        done = hookspawn("sandbox", "check")
        assert done.returncode == 1
        assert done.stdout.startswith(f"{path}: sandbox.backend: 'lxc': unknown")

    def test_without_config_or_variable_it_says_what_to_give(self) -> None:
        done = hookspawn("sandbox", "check")
        assert done.returncode == 2
        assert done.stderr == (
            "hookspawn sandbox: check: give CONFIG or set HOOKSPAWN_SANDBOX_CONFIG\n"
        )

    def test_unreadable_or_non_json_files_are_one_line(self, tmp_path: Path) -> None:
        done = hookspawn("sandbox", "check", str(tmp_path / "missing.json"))
        assert done.returncode == 1
        assert done.stdout.startswith(f"{tmp_path / 'missing.json'}: (file): cannot read it")
        (tmp_path / "bad.json").write_text('{"sandbox": ')
        done = hookspawn("sandbox", "check", str(tmp_path / "bad.json"))
        assert done.returncode == 1
        assert done.stdout.splitlines() == [
            f"{tmp_path / 'bad.json'}: (file): not JSON: Expecting value at line 1 column 13"
        ]

    def test_a_readonly_mount_inside_a_writable_one_passes_with_a_warning_naming_both(
        self, tmp_path: Path
    ) -> None:
        (tmp_path / "out" / "ref").mkdir(parents=True)
        out, ref = str(tmp_path / "out"), str(tmp_path / "out" / "ref")
        doc = {"sandbox": {"backend": "srt", "mounts": [
            {"source": out, "target": out, "mode": "writable"},
            {"source": ref, "target": ref, "mode": "readonly"}]}}  # fmt: skip
        path = write(tmp_path / "s.json", doc)
        done = hookspawn("sandbox", "check", str(path))
        assert (done.returncode, done.stdout) == (0, "")
        assert done.stderr == (
            f"{path}: sandbox.mounts[1].mode: warning: readonly {ref} lies inside the writable "
            f"sandbox.mounts[0] ({out}): srt mounts only add access, so it stays writable "
            "(valid, but the readonly mode has no effect)\n"
        )

    def test_backend_none_passes_with_a_warning(self, tmp_path: Path) -> None:
        path = write(tmp_path / "s.json", {"sandbox": {"backend": "none"}})
        done = hookspawn("sandbox", "check", str(path))
        assert done.returncode == 0
        assert "unconfined" in done.stderr

    def test_write_belongs_to_migrate(self, tmp_path: Path) -> None:
        path = write(tmp_path / "s.json", SRT_CACHE)
        done = hookspawn("sandbox", "check", str(path), "--write")
        assert done.returncode == 2
        assert "--write is not an option of `check` (migrate only)" in done.stderr


@pytest.mark.slow
class TestProbe:
    """`check --probe` starts the backend as the runner's start does (one confined command as
    HOOKSPAWN_RUNNER_USER); without --probe, check validates only."""

    def _srt(self, tmp_path: Path) -> Path:
        return write(tmp_path / "sandbox.json", {"sandbox": {"backend": "srt", "mounts": []}})

    @pytest.mark.needs("srt")
    def test_srt_starts_and_says_as_whom(self, tmp_path: Path) -> None:
        done = hookspawn("sandbox", "check", str(self._srt(tmp_path)), "--probe")
        assert (done.returncode, done.stdout) == (0, ""), done.stderr
        who = "the runner user 'nobody'" if os.geteuid() == 0 else "the runner"
        assert done.stderr == (
            f"{tmp_path / 'sandbox.json'}: sandbox.backend: srt started a probe command as {who}\n"
        )

    def test_without_srt_on_the_path_it_exits_1_naming_why(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        path = self._srt(tmp_path)
        empty = tmp_path / "bin"
        empty.mkdir()
        monkeypatch.setenv("PATH", str(empty))
        assert hookspawn("sandbox", "check", str(path)).returncode == 0  # validates only
        done = hookspawn("sandbox", "check", str(path), "--probe")
        assert done.returncode == 1
        assert done.stdout.startswith(f"{path}: sandbox.backend: srt cannot start as ")
        assert done.stdout.endswith(
            ": srt is not installed (srt needs bubblewrap, socat and ripgrep on Linux; "
            "scripts/setup installs them)\n"
        )

    @pytest.mark.skipif(os.geteuid() != 0, reason="a runner user is switched to only by root")
    def test_a_runner_user_that_does_not_exist_exits_1_naming_it(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        path = self._srt(tmp_path)
        monkeypatch.setenv("HOOKSPAWN_RUNNER_USER", "no-such-runner")
        assert hookspawn("sandbox", "check", str(path)).returncode == 0
        done = hookspawn("sandbox", "check", str(path), "--probe")
        assert (done.returncode, done.stderr) == (1, "")
        assert done.stdout == (
            f"{path}: sandbox.backend: cannot probe srt: HOOKSPAWN_RUNNER_USER: no user "
            "'no-such-runner' on this machine\n"
        )

    def test_a_backend_this_host_cannot_run_and_an_invalid_file_exit_1(
        self, tmp_path: Path
    ) -> None:
        path = write(tmp_path / "vm.json", {"sandbox": {"backend": "microsandbox"}})
        assert hookspawn("sandbox", "check", str(path)).returncode == 0
        done = hookspawn("sandbox", "check", str(path), "--probe")
        assert done.returncode == 1
        assert "microsandbox cannot start as" in done.stdout and "needs a VM host" in done.stdout
        broken = write(tmp_path / "broken.json", {"sandbox": {"backend": "srt", "mounts": 1}})
        done = hookspawn("sandbox", "check", str(broken), "--probe")
        assert (done.returncode, done.stdout) == (
            1,
            f"{broken}: sandbox.mounts: must be a list of mounts\n",
        )
        assert hookspawn("sandbox", "migrate", str(broken), "--probe").returncode == 2


LEGACY = {
    "security": {"sandboxReadRoots": ["/srv/reference-data"], "sandboxWriteRoots": ["/srv/out"]},
    "sandbox": {
        "backend": "srt",
        "mounts": [{"source": "/srv/cache", "target": "/srv/cache", "readOnly": False}],
    },
}


def srv_under(doc: object, tmp_path: Path) -> Any:
    """`doc` with its `/srv/…` paths moved under tmp_path (created there): migrate keeps what
    `sandbox check` accepts on this host, where a source must exist."""
    for name in ("cache", "reference-data", "out"):
        (tmp_path / "srv" / name).mkdir(parents=True, exist_ok=True)
    return json.loads(json.dumps(doc).replace('"/srv/', f'"{tmp_path}/srv/'))


class TestMigrate:
    def test_prints_the_migrated_json_and_a_diff_and_changes_no_file(self, tmp_path: Path) -> None:
        path = write(tmp_path / "s.json", srv_under(LEGACY, tmp_path))
        before = path.read_bytes()
        done = hookspawn("sandbox", "migrate", str(path))
        assert done.returncode == 0, done.stderr
        expected = {
            "sandbox": {
                "backend": "srt",
                "mounts": [
                    {"source": "/srv/cache", "target": "/srv/cache", "mode": "writable"},
                    {
                        "source": "/srv/reference-data",
                        "target": "/srv/reference-data",
                        "mode": "readonly",
                    },
                    {"source": "/srv/out", "target": "/srv/out", "mode": "writable"},
                ],
            }
        }
        assert json.loads(done.stdout) == srv_under(expected, tmp_path)
        assert done.stderr.startswith(f"--- {path}\n+++ {path} (migrated)\n@@ ")
        assert '-    "sandboxReadRoots": [\n' in done.stderr
        assert '+        "mode": "writable"\n' in done.stderr
        assert path.read_bytes() == before

    def test_write_rewrites_the_file_and_a_second_run_changes_nothing(self, tmp_path: Path) -> None:
        path = write(tmp_path / "s.json", srv_under(LEGACY, tmp_path))
        first = hookspawn("sandbox", "migrate", str(path), "--write")
        assert first.returncode == 0
        assert path.read_text() == first.stdout
        again = hookspawn("sandbox", "migrate", str(path), "--write")
        assert (again.returncode, again.stdout, again.stderr) == (0, first.stdout, "")

    @pytest.mark.parametrize("example", [SRT_CACHE, MICROSANDBOX_REFERENCE, MICROSANDBOX_OVERLAY])
    def test_an_already_migrated_file_comes_back_byte_for_byte(
        self, example: dict[str, Any], tmp_path: Path
    ) -> None:
        path = tmp_path / "s.json"
        example = on_host(example, tmp_path)
        path.write_text(json.dumps(example))  # one line: not how migrate would format it
        done = hookspawn("sandbox", "migrate", str(path), "--write")
        assert (done.returncode, done.stdout, done.stderr) == (0, path.read_text() + "\n", "")
        assert path.read_text() == json.dumps(example)

    def test_a_contradiction_changes_nothing_and_names_the_field(self, tmp_path: Path) -> None:
        doc = {"sandbox": {"backend": "srt", "mounts": [
            {"source": "/a", "target": "/a", "mode": "readonly", "readOnly": False}]}}  # fmt: skip
        path = write(tmp_path / "s.json", doc)
        before = path.read_bytes()
        done = hookspawn("sandbox", "migrate", str(path), "--write")
        assert done.returncode == 1
        assert done.stdout == ""
        assert done.stderr == (
            f"{path}: sandbox.mounts[0].readOnly: false contradicts mode 'readonly': remove one\n"
        )
        assert path.read_bytes() == before

    def test_a_file_that_is_not_json_is_one_line(self, tmp_path: Path) -> None:
        (tmp_path / "s.json").write_text("nope")
        done = hookspawn("sandbox", "migrate", str(tmp_path / "s.json"))
        assert done.returncode == 2
        assert done.stderr.startswith(f"hookspawn sandbox: {tmp_path / 's.json'} is not JSON")

    def test_the_result_always_passes_check_stdout_stays_the_json_alone(
        self, tmp_path: Path
    ) -> None:
        """Roots in both lists, or a read root inside a write root: what srt would refuse is
        merged or dropped, said on stderr; `sandbox check` accepts what was written."""
        roots = {name: tmp_path / name for name in ("out", "out/ref", "ref", "both")}
        for made in roots.values():
            made.mkdir(parents=True, exist_ok=True)
        doc = {
            "security": {
                "sandboxReadRoots": [str(roots["out/ref"]), str(roots["ref"]), str(roots["both"])],
                "sandboxWriteRoots": [str(roots["out"]), str(roots["both"])],
            }
        }
        path = write(tmp_path / "s.json", doc)
        done = hookspawn("sandbox", "migrate", str(path), "--write")
        assert done.returncode == 0, done.stderr
        migrated = json.loads(done.stdout)  # the JSON and nothing else
        assert done.stdout == path.read_text()
        assert [(m["target"], m["mode"]) for m in migrated["sandbox"]["mounts"]] == [
            (str(roots["ref"]), "readonly"),
            (str(roots["out"]), "writable"),
            (str(roots["both"]), "writable"),
        ]
        assert f"{path}: security.sandboxReadRoots {roots['out/ref']} lies inside" in done.stderr
        assert f"{path}: {roots['both']} is in both security.sandboxReadRoots" in done.stderr
        checked = hookspawn("sandbox", "check", str(path))
        assert (checked.returncode, checked.stdout) == (0, "")

    def test_a_result_check_would_refuse_is_neither_printed_nor_written(
        self, tmp_path: Path
    ) -> None:
        """An existing mount whose source this host lacks: migrating cannot mend it."""
        missing = str(tmp_path / "gone")
        doc = {
            "sandbox": {
                "backend": "srt",
                "mounts": [{"source": missing, "target": missing, "readOnly": True}],
            },
            "security": {"sandboxWriteRoots": [str(tmp_path)]},
        }
        path = write(tmp_path / "s.json", doc)
        before = path.read_bytes()
        done = hookspawn("sandbox", "migrate", str(path), "--write")
        assert (done.returncode, done.stdout) == (1, "")
        assert (
            f"{path}: sandbox.mounts[0].source: {missing} does not exist on this host "
            "(after migrating)"
        ) in done.stderr
        assert "nothing written" in done.stderr
        assert path.read_bytes() == before

    def test_a_root_check_would_refuse_on_this_host_is_dropped_and_said(
        self, tmp_path: Path
    ) -> None:
        """A read root that does not exist, a write root that is a symbolic link into the data
        directory: each dropped with the reason `sandbox check` gives; the rest migrates."""
        (tmp_path / "data" / "workspaces").mkdir(parents=True)
        (tmp_path / "innocent").symlink_to(tmp_path / "data" / "workspaces")
        (tmp_path / "ref").mkdir()
        missing, innocent, ref = (str(tmp_path / n) for n in ("missing", "innocent", "ref"))
        doc = {"security": {"sandboxReadRoots": [missing, ref], "sandboxWriteRoots": [innocent]}}
        path = write(tmp_path / "s.json", doc)
        done = hookspawn("sandbox", "migrate", str(path), "--write")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["sandbox"]["mounts"] == [
            {"source": ref, "target": ref, "mode": "readonly"}
        ]
        assert (
            f"{path}: security.sandboxReadRoots {missing}: dropped, since {missing} does not "
            "exist on this host\n"
        ) in done.stderr
        assert (
            f"{path}: security.sandboxWriteRoots {innocent}: dropped, since {innocent} leads to "
            f"{tmp_path / 'data' / 'workspaces'}, which is {tmp_path / 'data'}, the data directory"
        ) in done.stderr
        checked = hookspawn("sandbox", "check", str(path))
        assert (checked.returncode, checked.stdout, checked.stderr) == (0, "", "")

    def test_an_existing_readonly_mount_a_write_root_now_covers_migrates_with_a_warning(
        self, tmp_path: Path
    ) -> None:
        """Valid, but srt keeps it writable: `sandbox check` says so, and the file is written."""
        (tmp_path / "out" / "ref").mkdir(parents=True)
        out, ref = str(tmp_path / "out"), str(tmp_path / "out" / "ref")
        doc = {
            "sandbox": {
                "backend": "srt",
                "mounts": [{"source": ref, "target": ref, "mode": "readonly"}],
            },
            "security": {"sandboxWriteRoots": [out]},
        }
        path = write(tmp_path / "s.json", doc)
        done = hookspawn("sandbox", "migrate", str(path), "--write")
        assert done.returncode == 0, done.stderr
        checked = hookspawn("sandbox", "check", str(path))
        assert (checked.returncode, checked.stdout) == (0, "")
        assert f"readonly {ref} lies inside the writable sandbox.mounts[1] ({out})" in (
            checked.stderr
        )
