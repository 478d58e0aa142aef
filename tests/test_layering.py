"""The package arrows (hookspawn → workers → triggers → agents → templating) and a pure core.

Each package imports only the packages to its right; every import counts, the ones inside
functions too. The pure core (templating, agents, triggers, and the pure decision modules of
workers) loads no broker, store, HTTP or GitHub library, checked in a fresh interpreter.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: from the front door down: a package may import only the packages after it
ORDER = ("hookspawn", "workers", "triggers", "agents", "templating")

#: the pure core: whole packages, and the modules of workers that decide without I/O
PURE_PACKAGES = ("templating", "agents", "triggers")
PURE_MODULES = (
    "workers.github.installation",
    "workers.github.lifecycle",
    "workers.github.connection_sync",
    "workers.delivery.explain",
)

#: what the pure core must never load
IO_LIBRARIES = ("celery", "redis", "httpx", "githubkit", "kombu", "uvicorn", "fastapi")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules_of(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def imports_of(source: str, module: str, *, is_package: bool = False) -> list[tuple[int, str]]:
    """(line, imported module) for every import statement, at any depth; relative ones resolved."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            found.append((node.lineno, name))
    return found


def test_the_import_reader_sees_function_level_and_relative_imports() -> None:
    source = (
        "import workers.keys\n"
        "def later():\n"
        "    from hookspawn.web import api\n"
        "    from .matching import TriggerIndex\n"
    )
    assert imports_of(source, "triggers.intake") == [
        (1, "workers.keys"),
        (3, "hookspawn.web"),
        (4, "triggers.matching"),
    ]


def test_each_package_imports_only_the_packages_to_its_right() -> None:
    wrong: list[str] = []
    for rank, package in enumerate(ORDER):
        paths = modules_of(package)
        assert paths, f"no modules found in {package}/"
        for path in paths:
            module = module_name(path)
            found = imports_of(
                path.read_text(encoding="utf-8"), module, is_package=path.name == "__init__.py"
            )
            for line, name in found:
                top = name.split(".")[0]
                if top in ORDER and top != package and ORDER.index(top) < rank:
                    where = path.relative_to(ROOT)
                    wrong.append(f"{where}:{line}: {package} imports {name}")
    assert not wrong, (
        "imports against the package arrows " + " → ".join(ORDER) + ":\n" + ("\n".join(wrong))
    )


def test_the_pure_core_loads_no_io_library() -> None:
    modules = [module_name(p) for package in PURE_PACKAGES for p in modules_of(package)]
    modules += PURE_MODULES
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "loaded = {m.split('.')[0] for m in sys.modules}\n"
        f"print(','.join(sorted(loaded & {set(IO_LIBRARIES)!r})))\n"
    )
    result = subprocess.run(
        [sys.executable, "-P", "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert len(modules) > 20, modules
    assert result.stdout.strip() == "", f"the pure core loaded {result.stdout.strip()}"


#: inside workers, from the top down: the wiring at its root builds the three programs (the
#: delivery path, the local runner over the session side's records and broker, GitHub); the
#: modules left at the root (errors, keys, settings, metrics, timestamps, ...) are the
#: base every program shares. A module may import only its own layer and the layers after it.
WORKERS_LAYERS = (
    ("workers.runtime", "workers.tasks"),
    ("workers.delivery",),
    ("workers.session.runner",),
    ("workers.session",),
    ("workers.github",),
    ("workers",),
)


def workers_layer(module: str) -> int:
    """The index in WORKERS_LAYERS of the most specific entry holding `module`."""
    best, best_len = len(WORKERS_LAYERS) - 1, 0
    for index, prefixes in enumerate(WORKERS_LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = index, len(prefix)
    return best


def test_the_workers_layers_are_told_apart() -> None:
    assert workers_layer("workers.runtime") == 0
    assert workers_layer("workers.delivery.pipeline") == 1
    assert workers_layer("workers.session.runner.run") == 2
    assert workers_layer("workers.session.broker") == 3
    assert workers_layer("workers.github.client") == 4
    assert workers_layer("workers.keys") == 5


def test_workers_sub_packages_import_only_the_layers_below_them() -> None:
    wrong: list[str] = []
    for path in modules_of("workers"):
        module = module_name(path)
        rank = workers_layer(module)
        source = path.read_text(encoding="utf-8")
        for line, name in imports_of(source, module, is_package=path.name == "__init__.py"):
            if name.split(".")[0] != "workers" or name == "workers":
                continue
            if workers_layer(name) < rank:
                wrong.append(f"{path.relative_to(ROOT)}:{line}: {module} imports {name}")
    assert not wrong, "imports against the layers of workers:\n" + "\n".join(wrong)


def test_workers_keeps_few_modules_at_its_root() -> None:
    root = sorted(p.name for p in (ROOT / "workers").glob("*.py"))
    assert len(root) <= 15, root
    packages = [p for p in (ROOT / "workers").iterdir() if (p / "__init__.py").is_file()]
    assert len(packages) >= 2, packages
