"""What hookspawn relies on in uvicorn beyond its documented interface, checked against the
installed uvicorn: every name `hookspawn.web.server.limits.UVICORN_CONTRACT` lists exists with the
shape the limits use, the limits module uses no uvicorn name the contract leaves out, and no
other module reaches past uvicorn's public `Config` and `Server`."""

from __future__ import annotations

import ast
import asyncio
import importlib
import inspect
import logging
from pathlib import Path
from typing import Any

import uvicorn
from uvicorn.server import ServerState

from hookspawn.web.server.limits import UVICORN_CONTRACT, GuardedProtocol

ROOT = Path(__file__).resolve().parents[4]
LIMITS = ROOT / "hookspawn" / "web" / "server" / "limits.py"
#: the packages whose modules may use only uvicorn's public names
PACKAGES = ("hookspawn", "workers", "triggers", "agents", "templating")


async def _app(scope: Any, receive: Any, send: Any) -> None:
    """Never called: a protocol needs an app to be made."""


def uvicorn_module() -> Any:
    return importlib.import_module(UVICORN_CONTRACT.module)


def uvicorn_protocol() -> type[Any]:
    cls: type[Any] = getattr(uvicorn_module(), UVICORN_CONTRACT.protocol)
    return cls


def made_protocol() -> Any:
    """uvicorn's protocol as uvicorn makes it for a connection (nothing connected yet)."""

    async def make() -> Any:
        config = uvicorn.Config(_app, lifespan="off", http="httptools", ws="none")
        config.load()
        return uvicorn_protocol()(config, ServerState(), {}, _loop=asyncio.get_running_loop())

    return asyncio.run(make())


def made_cycle() -> Any:
    """uvicorn's request cycle, made as its protocol makes one."""
    cycle_class = uvicorn_module().RequestResponseCycle

    async def make() -> Any:
        return cycle_class(
            scope={},
            transport=None,
            flow=None,
            logger=logging.getLogger("test"),
            access_logger=logging.getLogger("test"),
            access_log=False,
            default_headers=[],
            message_event=asyncio.Event(),
            expect_100_continue=False,
            keep_alive=True,
            on_response=lambda: None,
        )

    return asyncio.run(make())


def test_the_class_the_limits_extend_is_uvicorns_protocol() -> None:
    assert issubclass(GuardedProtocol, uvicorn_protocol())
    assert issubclass(uvicorn_protocol(), asyncio.Protocol)


def test_each_method_the_limits_extend_exists_with_the_arguments_they_pass() -> None:
    for name, arguments in UVICORN_CONTRACT.methods.items():
        method = getattr(uvicorn_protocol(), name, None)
        assert callable(method), f"uvicorn's protocol has no method {name}"
        parameters = list(inspect.signature(method).parameters)
        assert tuple(parameters[1:]) == arguments, f"{name}{tuple(parameters)}"


def test_the_attributes_the_limits_use_are_uvicorns() -> None:
    protocol = made_protocol()
    for name in UVICORN_CONTRACT.protocol_attributes:
        assert name in vars(protocol), f"uvicorn's protocol sets no attribute {name}"
    assert protocol.cycle is None  # no request read yet: what `refuse` checks for
    cycle = made_cycle()
    for name in UVICORN_CONTRACT.cycle_attributes:
        assert name in vars(cycle), f"uvicorn's request cycle has no attribute {name}"
    assert (cycle.response_started, cycle.response_complete, cycle.disconnected) == (
        False,
        False,
        False,
    )
    assert isinstance(cycle.message_event, asyncio.Event)


def test_each_answer_is_reported_through_the_protocols_on_response_complete() -> None:
    """uvicorn hands each cycle the protocol's `on_response_complete`, looked up on the
    instance (so the limits' override is the one called as an answer completes)."""
    source = inspect.getsource(uvicorn_protocol().on_headers_complete)
    assert "on_response=self.on_response_complete" in source
    assert "self.send_400_response(" in inspect.getsource(uvicorn_protocol().data_received)


# -- the limits module names everything it uses ----------------------------------------------


def _tree() -> ast.Module:
    return ast.parse(LIMITS.read_text())


def _guarded_class(tree: ast.Module) -> ast.ClassDef:
    return next(
        node
        for node in tree.body
        if isinstance(node, ast.ClassDef) and node.name == GuardedProtocol.__name__
    )


def _attributes_of(tree: ast.AST, owner: str) -> set[str]:
    return {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == owner
    }


def test_the_limits_extend_no_uvicorn_method_the_contract_leaves_out() -> None:
    uvicorn_names = set(dir(uvicorn_protocol()))
    defined = {
        node.name
        for node in _guarded_class(_tree()).body
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("__")
    }
    assert defined & uvicorn_names == set(UVICORN_CONTRACT.methods)


def test_the_limits_read_no_uvicorn_attribute_the_contract_leaves_out() -> None:
    tree = _tree()
    protocol = made_protocol()
    uvicorn_names = set(vars(protocol)) | set(dir(uvicorn_protocol()))
    used = _attributes_of(_guarded_class(tree), "self") & uvicorn_names
    allowed = set(UVICORN_CONTRACT.protocol_attributes) | set(UVICORN_CONTRACT.methods)
    assert used <= allowed, f"not in UVICORN_CONTRACT: {sorted(used - allowed)}"
    cycle_names = set(vars(made_cycle())) | set(dir(uvicorn_module().RequestResponseCycle))
    used = _attributes_of(tree, "cycle") & cycle_names
    assert used <= set(UVICORN_CONTRACT.cycle_attributes), sorted(used)


def test_the_limits_import_only_the_contracts_class_from_uvicorn() -> None:
    imported = {
        (node.module, alias.name)
        for node in ast.walk(_tree())
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("uvicorn")
        for alias in node.names
    }
    assert imported == {(UVICORN_CONTRACT.module, UVICORN_CONTRACT.protocol)}
    assert GuardedProtocol.__bases__ == (uvicorn_protocol(),)


# -- nothing else reaches into uvicorn ---------------------------------------------------------


def _private_uvicorn_names() -> set[str]:
    """Names a module could only get from uvicorn's internals: its underscore names, and
    everything the limits' contract names."""
    owners = [
        uvicorn.Server,
        uvicorn.Config,
        uvicorn_protocol(),
        uvicorn_module().RequestResponseCycle,
    ]
    names = {
        name
        for owner in owners
        for name in dir(owner)
        if name.startswith("_") and not name.endswith("__")
    }
    names |= {name for name in vars(uvicorn_module()) if name.isupper()}  # STATUS_LINE
    names |= {"HttpToolsProtocol", "H11Protocol", "RequestResponseCycle", "FlowControl"}
    names |= {"HIGH_WATER_LIMIT", "on_response_complete", "send_400_response"}
    names |= {"response_started", "response_complete", "message_event"}
    return names


def _uvicorn_uses(path: Path, root: Path = ROOT) -> list[str]:
    """What a module outside the limits takes from uvicorn beyond `uvicorn.Config`,
    `uvicorn.Server` and the other names of uvicorn's `__all__`."""
    found = []
    private = _private_uvicorn_names()
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        where = f"{path.relative_to(root)}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Import):
            found += [
                f"{where}: import {alias.name}"
                for alias in node.names
                if alias.name.startswith("uvicorn.")
            ]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "uvicorn":
            found.append(f"{where}: from {node.module} import ...")
        elif isinstance(node, ast.Attribute):
            if (
                isinstance(node.value, ast.Name)
                and node.value.id == "uvicorn"
                and node.attr not in uvicorn.__all__
            ):
                found.append(f"{where}: uvicorn.{node.attr}")
            elif node.attr in private:
                found.append(f"{where}: .{node.attr}")
    return found


def test_the_private_name_reader_sees_imports_and_attributes(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "import uvicorn\nfrom uvicorn.protocols.utils import get_client_addr\n"
        "class S(uvicorn.Server):\n    def f(self):\n        self._log_started_message([])\n"
        "x = uvicorn.Config\ny = uvicorn.protocols\n"
    )
    assert sorted(_uvicorn_uses(module, tmp_path)) == [
        "m.py:2: from uvicorn.protocols.utils import ...",
        "m.py:5: ._log_started_message",
        "m.py:7: uvicorn.protocols",
    ]


def test_no_other_module_uses_a_private_uvicorn_name() -> None:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path != LIMITS:
                found += _uvicorn_uses(path)
    assert found == []
