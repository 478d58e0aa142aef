"""Measuring a session root: a file at its length (a sparse one too) or its blocks when
more, links not followed, hard links counted once; and where a runner's session cgroups go,
read from /proc."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from agents.environment_spec import Resources
from workers.session.runner.cgroup import CgroupLimits, CgroupsUnavailable, _own_dirs
from workers.session.runner.disk_usage import DiskWatch, disk_usage, format_size

MIB = 1024 * 1024


def test_usage_counts_apparent_size_each_inode_once_and_never_through_a_link(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    (root / "dir").mkdir(parents=True)
    empty = disk_usage(root)
    (root / "dir" / "data").write_bytes(os.urandom(2 * MIB))
    for n in range(20):  # twenty more names of one file: still one file
        os.link(root / "dir" / "data", root / f"again{n}")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "big").write_bytes(os.urandom(4 * MIB))
    (root / "out").symlink_to(outside)
    (root / "big").symlink_to(outside / "big")
    linked = disk_usage(root) - empty
    assert 2 * MIB <= linked < 2 * MIB + 64 * 1024
    with (root / "sparse").open("wb") as sparse:
        sparse.truncate(512 * MIB)  # holds no block, and counts its whole length
    assert os.stat(root / "sparse").st_blocks == 0
    assert disk_usage(root) - empty - linked == 512 * MIB


def test_a_file_reserving_blocks_past_its_length_counts_its_blocks(tmp_path: Path) -> None:
    empty = disk_usage(tmp_path)
    reserved = tmp_path / "reserved"
    reserved.touch()
    # blocks kept past the end of an empty file (fallocate's FALLOC_FL_KEEP_SIZE)
    done = subprocess.run(["fallocate", "--keep-size", "-l", "1M", str(reserved)], check=False)
    if done.returncode != 0:
        pytest.skip("fallocate --keep-size is not supported on this file system")
    info = os.stat(reserved)
    assert (info.st_size, info.st_blocks * 512) == (0, 1 * MIB)
    assert disk_usage(tmp_path) - empty == 1 * MIB


def test_the_watch_keeps_what_it_saw_past_the_limit(tmp_path: Path) -> None:
    watch = DiskWatch(tmp_path, 1 * MIB)
    assert watch.check() is None
    (tmp_path / "blob").write_bytes(os.urandom(2 * MIB))
    seen = watch.check()
    assert seen is not None and seen >= 2 * MIB
    (tmp_path / "blob").unlink()
    assert watch.check() == seen


def test_sizes_read_as_people_write_them() -> None:
    assert format_size(10 * 1024**3) == "10 GiB"
    assert format_size(20 * MIB) == "20 MiB"
    assert format_size(int(2.5 * MIB)) == "2.5 MiB"
    assert format_size(640) == "640 bytes"


def test_limits_come_from_the_environments_resources() -> None:
    limits = CgroupLimits.of(Resources(memory_mb=256, cpu_count=2), 512)
    assert limits == CgroupLimits(memory=256 * MIB, cpus=2, processes=512)
    assert limits.describe() == "memory 256 MiB, 2 CPUs, at most 512 processes"
    assert CgroupLimits.of(None, 64).describe() == "memory unlimited, any CPU, at most 64 processes"


def _proc(tmp_path: Path, mountinfo: str, cgroup: str) -> Path:
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "mountinfo").write_text(mountinfo)
    (proc / "cgroup").write_text(cgroup)
    return proc


def test_v1_cgroups_are_found_under_each_hierarchys_mount_root(tmp_path: Path) -> None:
    # a container's view: the memory hierarchy mounted from its own cgroup, cpu with cpuacct
    proc = _proc(
        tmp_path,
        "30 25 0:26 /docker/abc /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
        "31 25 0:27 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n"
        "32 25 0:28 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
        "33 25 0:29 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n",
        "4:memory:/docker/abc/runner\n8:pids:/\n1:cpu,cpuacct:/svc\n0::/\n",
    )
    assert _own_dirs(proc) == (
        1,
        {
            "memory": Path("/sys/fs/cgroup/memory/runner"),
            "pids": Path("/sys/fs/cgroup/pids"),
            "cpu": Path("/sys/fs/cgroup/cpu,cpuacct/svc"),
        },
    )


def test_without_the_controllers_mounted_no_cgroup_is_made(tmp_path: Path) -> None:
    proc = _proc(
        tmp_path,
        "31 25 0:27 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n",
        "8:pids:/\n0::/\n",
    )
    with pytest.raises(CgroupsUnavailable, match="no cgroup v1 hierarchy for memory, cpu"):
        _own_dirs(proc)
