"""What a session's own git gets: the destinations srt lets it reach, the NO_PROXY that sends
them through srt's proxy, and the standalone credential helper."""

from __future__ import annotations

import subprocess
from pathlib import Path

from triggers.session.spec import SessionMount
from workers.session.runner.session_git import (
    SRT_NO_PROXY,
    no_proxy,
    place_helper,
    reach_through_proxy,
    session_destinations,
    session_git_env,
)
from workers.session.runner.staging import BrokerLink


def _mount(repository: str, auth: str = "githubApp") -> SessionMount:
    return SessionMount.model_validate(
        {
            "repository": repository,
            "url": f"https://github.com/{repository}.git",
            "mount_path": f"/workspace/{repository.split('/')[1]}",
            "ref": "main",
            "depth": 1,
            "auth": auth,
        }
    )


def test_the_session_reaches_its_broker_and_its_github_app_mounts_git_hosts_after_rewrite() -> None:
    broker = BrokerLink("http://127.0.0.1:8080/sessions/hs-1", "secret")
    mounts = [_mount("acme/widgets"), _mount("acme/gadgets"), _mount("acme/public", "none")]
    rewrites = [("https://github.com/acme/widgets", "http://10.1.2.3:9418/w")]
    assert session_destinations(broker, mounts, rewrites) == [
        "127.0.0.1:8080",
        "10.1.2.3:9418",
        "github.com:443",
    ]
    # a file:// rewrite and no broker: nothing to reach
    assert session_destinations(None, mounts[:1], [("https://", "file:///srv/git/")]) == []


def test_no_proxy_leaves_out_what_the_session_reaches_and_nothing_else() -> None:
    assert no_proxy(["github.com:443"]) is None
    assert no_proxy(["127.0.0.1:8080", "10.1.2.3:9418"]) == (
        "localhost,::1,169.254.0.0/16,172.16.0.0/12,192.168.0.0/16"
    )
    assert reach_through_proxy(["git", "push"], ["github.com:443"]) == ["git", "push"]
    value = ",".join(e for e in SRT_NO_PROXY if e != "127.0.0.1")
    assert reach_through_proxy(["git", "push"], ["127.0.0.1:1"]) == [
        "/usr/bin/env",
        f"NO_PROXY={value}",
        f"no_proxy={value}",
        "git",
        "push",
    ]


def test_the_placed_helper_runs_on_the_systems_python_without_hookspawn(tmp_path: Path) -> None:
    helper = place_helper(tmp_path / "hs-1.tools")
    assert helper.stat().st_mode & 0o777 == 0o755
    env = session_git_env(None, helper, "/usr/bin:/bin")
    assert env == {"PATH": f"{tmp_path / 'hs-1.tools'}:/usr/bin:/bin"}
    # no hookspawn on the path, no site packages: the script alone
    done = subprocess.run(
        ["git-credential-hookspawn", "get"],
        env={"PATH": env["PATH"]},
        input="protocol=https\nhost=github.com\n\n",
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 1, done.stderr
    assert done.stdout == "quit=1\n"
    assert done.stderr.strip() == (
        "git-credential-hookspawn: HOOKSPAWN_BROKER_URL and HOOKSPAWN_SESSION_CREDENTIAL must "
        "both be set"
    )
    assert helper.read_text().startswith("#!/usr/bin/env python3\n")
    assert place_helper(tmp_path / "hs-1.tools") == helper  # placed again over the old one
