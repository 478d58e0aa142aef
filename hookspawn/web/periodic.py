"""A piece of blocking work an app runs every few seconds while it serves (metrics flushing,
token revocation): in the threadpool, so the event loop never waits on it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

from starlette.concurrency import run_in_threadpool

__all__ = ["every"]


@contextlib.asynccontextmanager
async def every(
    interval: float, work: Callable[[], object], *, at_exit: bool = False
) -> AsyncIterator[None]:
    """Run `work` every `interval` seconds while the context is open, and once more when it
    closes if `at_exit`. `work` handles its own failures: one it raises ends the loop."""

    async def loop() -> None:
        while True:
            await asyncio.sleep(interval)
            await run_in_threadpool(work)

    task = asyncio.create_task(loop())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        if at_exit:
            await run_in_threadpool(work)
