"""Commands confined by the real sandbox runtime (srt, bubblewrap): what they see and write."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from agents.sandbox.config import SandboxConfig, SandboxMount
from workers.session.runner.command import account_of
from workers.session.runner.sandbox import (
    SandboxUnavailable,
    confine,
    host_paths_for,
    open_sandbox,
    sandbox_available,
    session_tmp,
    srt_scratch,
)

pytestmark = pytest.mark.slow


@dataclass
class Host:
    """A session root under a data directory, host directories beside it, and srt's own
    temporary directory for the session."""

    data: Path
    workspace: Path
    shared: Path
    private: Path
    scratch: Path


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Host]:
    data = tmp_path / "data"
    workspace = data / "workspaces" / "s1"
    (workspace / "workspace" / "w").mkdir(parents=True)
    (workspace / "home" / "user").mkdir(parents=True)
    session_tmp(workspace).mkdir()  # the runner makes it before the first confined command
    other = data / "workspaces" / "s0"
    other.mkdir()
    (other / "secret").write_text("another session's file")
    shared = tmp_path / "srv"
    shared.mkdir()
    private = tmp_path / "private"
    private.mkdir()
    (private / "key").write_text("not for sessions")
    scratch = srt_scratch(None)
    yield Host(data, workspace, shared, private, scratch)
    shutil.rmtree(scratch)


def run(
    host: Host, config: SandboxConfig, script: str, *, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    base = {"PATH": "/usr/bin:/bin", "HOME": str(host.workspace / "home" / "user")}
    argv, full_env = confine(
        ["/bin/sh", "-c", script],
        workspace=host.workspace,
        config=config,
        env=base | (env or {}),
        scratch=host.scratch,
    )
    return subprocess.run(
        argv,
        env=full_env,
        cwd=host.workspace / "workspace" / "w",
        capture_output=True,
        text=True,
        timeout=60,
    )


def srt(*mounts: SandboxMount, env: dict[str, str] | None = None) -> SandboxConfig:
    return SandboxConfig(backend="srt", mounts=mounts, env=env or {})


def test_this_host_can_start_the_sandbox() -> None:
    assert sandbox_available(srt()) is None


def test_the_session_root_is_writable_and_the_command_runs_in_it(host: Host) -> None:
    done = run(host, srt(), "echo made > made.txt && echo written > ../../home/user/h && pwd")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(host.workspace / "workspace" / "w")
    assert (host.workspace / "workspace" / "w" / "made.txt").read_text() == "made\n"
    assert (host.workspace / "home" / "user" / "h").read_text() == "written\n"


def test_a_writable_mount_is_writable_from_inside(host: Host) -> None:
    cache = host.shared / "cache"
    cache.mkdir()
    done = run(host, srt(SandboxMount(str(cache), str(cache), "writable")), f"echo pkg > {cache}/p")
    assert done.returncode == 0, done.stderr
    assert (cache / "p").read_text() == "pkg\n"


def test_a_readonly_mount_is_readable_and_not_writable(host: Host) -> None:
    ref = host.shared / "reference"
    ref.mkdir()
    (ref / "data.txt").write_text("reference data")
    mount = SandboxMount(str(ref), str(ref), "readonly")
    done = run(host, srt(mount), f"cat {ref}/data.txt")
    assert (done.returncode, done.stdout) == (0, "reference data")
    for script in (f"echo x > {ref}/data.txt", f"echo x > {ref}/new.txt", f"rm {ref}/data.txt"):
        done = run(host, srt(mount), script)
        assert done.returncode != 0, script
        assert "Read-only file system" in done.stderr or "Permission denied" in done.stderr
    assert sorted(p.name for p in ref.iterdir()) == ["data.txt"]
    assert (ref / "data.txt").read_text() == "reference data"


def test_a_host_path_that_is_not_mounted_is_not_visible(host: Host) -> None:
    # "not visible": outside the system directories (SYSTEM_READ), the session root and the
    # mounts, the host's directories are empty in the sandbox, other sessions' roots included
    checks = [
        f"test ! -e {host.private}/key",
        f"test ! -e {host.data}/workspaces/s0/secret",
        f"test -z \"$(ls -A {host.data}/workspaces | grep -v '^s1$')\"",
        f'test -z "$(ls -A {os.path.dirname(host.data)} | grep -v data)"',
        'test -z "$(find /root /home /srv /var /opt /mnt -mindepth 1 2>/dev/null)"',
        "test -r /usr/bin/env && test -r /etc/passwd",
    ]
    done = run(host, srt(), " && ".join(checks) + " && echo hidden")
    assert (done.returncode, done.stdout) == (0, "hidden\n"), done.stderr
    done = run(host, srt(), f"cat {host.private}/key")
    assert done.returncode != 0
    assert "No such file or directory" in done.stderr


def test_a_mount_makes_just_that_host_path_visible(host: Host) -> None:
    ref = host.private / "shared-sub"
    ref.mkdir()
    (ref / "f").write_text("shared")
    done = run(
        host,
        srt(SandboxMount(str(ref), str(ref), "readonly")),
        f"cat {ref}/f && test ! -e {host.private}/key && echo ok",
    )
    assert (done.returncode, done.stdout) == (0, "sharedok\n"), done.stderr


def test_a_nested_writable_mount_keeps_its_own_mode(host: Host) -> None:
    outer = host.shared / "data"
    inner = outer / "out"
    inner.mkdir(parents=True)
    config = srt(
        SandboxMount(str(outer), str(outer), "readonly"),
        SandboxMount(str(inner), str(inner), "writable"),
    )
    done = run(host, config, f"echo a > {inner}/a && (echo b > {outer}/b || echo refused)")
    assert (done.returncode, done.stdout) == (0, "refused\n"), done.stderr
    assert (inner / "a").read_text() == "a\n"
    assert not (outer / "b").exists()


def test_sandbox_env_reaches_commands_literally_and_the_runner_env_wins(host: Host) -> None:
    config = srt(env={"PNPM_CONFIG_STORE_DIR": "${HOME}/store", "LEVEL": "default"})
    done = run(
        host,
        config,
        'printf "%s|%s|%s" "$PNPM_CONFIG_STORE_DIR" "$LEVEL" "$HOME"',
        env={"LEVEL": "agent"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"${{HOME}}/store|agent|{host.workspace / 'home' / 'user'}"


def test_the_srt_settings_are_written_beside_the_session_root_out_of_its_reach(
    host: Host,
) -> None:
    argv, _ = confine(
        ["true"], workspace=host.workspace, config=srt(), env={}, scratch=host.scratch
    )
    settings = host.workspace.parent / "s1.srt.json"
    assert argv == [shutil.which("srt"), "--settings", str(settings), "--", "true"]
    written = json.loads(settings.read_text())
    assert written["filesystem"]["allowWrite"] == [str(host.workspace)]
    assert written["filesystem"]["denyWrite"] == ["/tmp/claude"]
    assert written["filesystem"]["denyRead"] == ["/"]
    assert written["bwrapPath"] == shutil.which("bwrap")
    before = settings.read_text()
    done = run(host, srt(), f"test ! -e {settings} && echo '{{}}' > {settings} && echo wrote")
    # inside, the directory around the session root is an empty scratch directory: the
    # settings are not there, and what is written there never reaches the host
    assert (done.returncode, done.stdout) == (0, "wrote\n"), done.stderr
    assert settings.read_text() == before


def test_temporary_files_stay_in_the_session_root_and_srt_s_shared_tmp_is_unwritable(
    host: Host,
) -> None:
    # srt hands commands TMPDIR=/tmp/claude and binds the host's /tmp/claude into every
    # sandbox when it exists: each session gets its own TMPDIR in its session root instead
    # (counted with it), and cannot write there, nor in srt's own scratch directory
    # it is made and left in place: removing it while another test's srt starts (the suite
    # runs in parallel) fails that srt, which saw it and then cannot bind it
    shared = Path("/tmp/claude")
    shared.mkdir(exist_ok=True)
    done = run(
        host,
        srt(),
        'echo "$TMPDIR"; f=$(mktemp); echo data > "$f"; cat "$f"; '
        "echo x > /tmp/claude/from-a-session 2>/dev/null || echo refused; "
        f"echo x > {host.scratch}/from-a-session 2>/dev/null || echo refused",
    )
    assert not (shared / "from-a-session").exists()
    assert not (host.scratch / "from-a-session").exists()
    assert done.returncode == 0, done.stderr
    tmp = host.workspace / ".tmp"
    assert done.stdout.splitlines() == [str(tmp), "data", "refused", "refused"]
    (written,) = tmp.iterdir()
    assert written.read_text() == "data\n"


def test_the_exit_status_and_arguments_pass_through(host: Host) -> None:
    argv, env = confine(
        ["/bin/sh", "-c", 'printf "%s," "$@"; exit 7', "sh", "a b", "$HOME", "*"],
        workspace=host.workspace,
        config=srt(),
        env={"PATH": "/usr/bin:/bin"},
        scratch=host.scratch,
    )
    done = subprocess.run(argv, env=env, cwd=host.workspace, capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (7, "a b,$HOME,*,"), done.stderr


class TestWhenTheSandboxCannotStart:
    def test_without_a_configuration_sessions_are_refused(self, host: Host) -> None:
        with pytest.raises(SandboxUnavailable, match="HOOKSPAWN_SANDBOX_CONFIG is unset"):
            open_sandbox(None, host=host_paths_for(host.data))

    def test_a_missing_srt_is_named(self) -> None:
        reason = sandbox_available(srt(), srt="/nonexistent/srt")
        assert reason is not None
        assert reason.startswith("/nonexistent/srt is not installed")

    def test_a_runtime_that_fails_its_probe_is_named_with_what_it_said(self) -> None:
        # a real program standing where srt should be: it starts and fails, as srt does when
        # bubblewrap cannot create its namespaces
        reason = sandbox_available(srt(), srt="false")
        assert reason == "srt cannot start a sandbox here: exit status 1"

    @pytest.mark.skipif(os.geteuid() != 0, reason="running the probe as another account needs root")
    def test_the_probe_runs_as_the_account_sessions_run_as(self, tmp_path: Path) -> None:
        # srt reached through a directory only root may enter: root's probe passes, and the
        # probe as the session account fails as that account's sessions would
        private = tmp_path / "root-only"
        private.mkdir(mode=0o700)
        wrapper = private / "srt"
        wrapper.write_text(f'#!/bin/sh\nexec {shutil.which("srt")} "$@"\n')
        wrapper.chmod(0o755)
        assert sandbox_available(srt(), srt=str(wrapper)) is None
        nobody = account_of("nobody")
        assert nobody is not None
        reason = sandbox_available(srt(), srt=str(wrapper), account=nobody)
        assert reason == f"the runner user 'nobody' cannot run {wrapper}: Permission denied"
        assert sandbox_available(srt(), account=nobody) is None

    def test_microsandbox_is_validated_but_refused_here(self, host: Host) -> None:
        config = SandboxConfig(backend="microsandbox")
        reason = sandbox_available(config)
        assert reason is not None and "needs a VM host" in reason
        with pytest.raises(SandboxUnavailable, match="needs a VM host"):
            confine(["true"], workspace=host.workspace, config=config, env={}, scratch=host.scratch)

    def test_an_invalid_configuration_is_refused_with_its_problems(
        self, host: Host, tmp_path: Path
    ) -> None:
        path = tmp_path / "s.json"
        path.write_text('{"sandbox": {"backend": "srt", "mounts": [{"source": "/nowhere", '
                        '"target": "/nowhere", "mode": "readonly"}]}}')  # fmt: skip
        with pytest.raises(SandboxUnavailable) as raised:
            open_sandbox(path, host=host_paths_for(host.data))
        assert str(raised.value) == (
            f"{path}: sandbox.mounts[0].source: /nowhere does not exist on this host"
        )

    def test_a_valid_configuration_opens(self, host: Host, tmp_path: Path) -> None:
        path = tmp_path / "s.json"
        mount = {"source": str(host.shared), "target": str(host.shared), "mode": "writable"}
        path.write_text(json.dumps({"sandbox": {"backend": "srt", "mounts": [mount]}}))
        config = open_sandbox(path, host=host_paths_for(host.data))
        assert config.mounts == (SandboxMount(str(host.shared), str(host.shared), "writable"),)

    def test_a_readonly_mount_inside_a_writable_one_opens_with_a_logged_warning(
        self, host: Host, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        inner = host.shared / "ref"
        inner.mkdir()
        mounts = [
            {"source": str(host.shared), "target": str(host.shared), "mode": "writable"},
            {"source": str(inner), "target": str(inner), "mode": "readonly"},
        ]
        path = tmp_path / "s.json"
        path.write_text(json.dumps({"sandbox": {"backend": "srt", "mounts": mounts}}))
        with caplog.at_level(logging.WARNING, logger="hookspawn.sandbox"):
            config = open_sandbox(path, host=host_paths_for(host.data))
        assert len(config.mounts) == 2
        assert (
            f"{path}: sandbox.mounts[1].mode: readonly {inner} lies inside the writable "
            f"sandbox.mounts[0] ({host.shared}): srt mounts only add access, so it stays "
            "writable (valid, but the readonly mode has no effect)"
        ) in [r.getMessage() for r in caplog.records]


def test_backend_none_runs_the_command_as_given_and_says_so_each_time(
    host: Host, caplog: pytest.LogCaptureFixture
) -> None:
    config = SandboxConfig(backend="none", env={"A": "1"})
    argv: Sequence[str]
    with caplog.at_level(logging.WARNING, logger="hookspawn.sandbox"):
        argv, env = confine(
            ["true"], workspace=host.workspace, config=config, env={"B": "2"}, scratch=host.scratch
        )
        assert sandbox_available(config) is None
    # unconfined, its temporary files still go to the session root
    tmp = str(host.workspace / ".tmp")
    assert (argv, env) == (["true"], {"A": "1", "B": "2", "TMPDIR": tmp})
    assert len(caplog.records) == 2
    assert all("UNCONFINED" in r.getMessage() for r in caplog.records)


def test_a_repository_in_the_session_root_commits_but_keeps_its_config_and_hooks(
    host: Host,
) -> None:
    # staging (hookspawn's own git) runs outside; inside, srt keeps .git/config (where the
    # credential helper is configured) and .git/hooks unwritable, and commits still work
    repo = host.workspace / "workspace" / "w"
    for args in (["init", "-q"], ["-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q",
                                 "--allow-empty", "-m", "one"]):  # fmt: skip
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    config_before = (repo / ".git" / "config").read_text()
    done = run(
        host,
        srt(),
        "echo f > f && git add f && git -c user.name=a -c user.email=a@b commit -qm two"
        " && git rev-list --count HEAD"
        " && (git config user.name other || echo config-refused)"
        " && (echo x > .git/hooks/pre-commit || echo hooks-refused)",
    )
    assert (done.returncode, done.stdout) == (0, "2\nconfig-refused\nhooks-refused\n")
    assert (repo / ".git" / "config").read_text() == config_before
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
