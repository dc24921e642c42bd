"""The worker pool: a task past the time limit is stopped (its worker killed and replaced), a task
whose worker dies fails alone, the library's errors come back as themselves, and the pool keeps
working after each of these."""

from __future__ import annotations

import asyncio
import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tabverify.errors import TableError
from tabverify.server.workers import WorkerDied, Workers, WorkTimeout


def _pid_after(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def _die() -> None:
    os._exit(9)


def _refuse() -> None:
    raise TableError("t.csv: the table is empty")


def _run(scenario: Any) -> None:
    """Run a coroutine on its own event loop in a thread (Playwright's sync API, used by the browser
    tests of the same session, keeps a loop running in the main thread)."""
    with ThreadPoolExecutor(1) as thread:
        thread.submit(asyncio.run, scenario).result()


def test_time_limit_worker_death_and_errors() -> None:
    async def scenario() -> None:
        workers = Workers(1, time_limit_s=3.0)  # room for a new worker to start after a kill
        try:
            first = await workers.run(_pid_after, 0)
            started = time.monotonic()
            with pytest.raises(WorkTimeout, match="limit of 3 s"):
                await workers.run(_pid_after, 30)
            assert time.monotonic() - started < 10  # stopped at the limit, not after 30 s
            replaced = await workers.run(_pid_after, 0)
            assert replaced != first  # the runaway's worker was killed and a new one started
            with pytest.raises(WorkerDied):
                await workers.run(_die)
            with pytest.raises(TableError, match="the table is empty"):
                await workers.run(_refuse)
            assert isinstance(await workers.run(_pid_after, 0), int)
        finally:
            workers.close()

    _run(scenario())


def test_a_slow_task_does_not_hold_up_a_quick_one() -> None:
    async def scenario() -> None:
        workers = Workers(2, time_limit_s=20.0)
        try:
            await asyncio.gather(workers.run(_pid_after, 0), workers.run(_pid_after, 0))  # both started
            slow = asyncio.ensure_future(workers.run(_pid_after, 3))
            await asyncio.sleep(0.2)
            started = time.monotonic()
            await workers.run(_pid_after, 0)
            assert time.monotonic() - started < 2.5 and not slow.done()
            await slow
        finally:
            workers.close()

    _run(scenario())
