"""One way to run an engine's chunks: in this process, in worker processes, or as Ray tasks.

Replay and judge cut their work into chunks of whole sessions and hand :func:`run_chunks` a
module-level function and one tuple of arguments per chunk; the results come back as the chunks
finish. Every engine keeps the same promises: at most a bounded number of chunks in flight (so
the driver holds a bounded number of results), and one error policy — a chunk that raises stops
the submitting, the chunks already running finish (and write their parts), then the first error
is raised; a re-run redoes only what is missing.

``setup``: what a worker builds once from the ``shared`` arguments before its first chunk (the
judge engine builds its judge and gives it the corpus state there, rather than sending both with
every chunk); each chunk then runs as ``fn(setup(*shared), *call)``, else as
``fn(*shared, *call)``. Ray tasks have no lasting worker: with Ray, ``setup`` runs in each task.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any

#: what a worker process's ``setup`` built (or its shared arguments), for every chunk it runs
_PREPARED: list[Any] = []


def run_chunks(
    fn: Callable[..., Any],
    calls: Iterable[tuple[Any, ...]],
    *,
    engine: str = "local",
    workers: int = 1,
    address: str | None = None,
    shared: tuple[Any, ...] = (),
    setup: Callable[..., Any] | None = None,
) -> Iterator[Any]:
    """``fn`` over ``calls`` on ``engine`` (``local``: this process when ``workers`` is 1 or
    there is one call, else ``workers`` processes; ``ray``: Ray tasks at ``address``)."""
    calls = list(calls)
    if not calls:
        return
    if engine == "ray":
        from .ray_engine import run_tasks

        if setup is not None:
            fn, shared = _set_up_in_task, (setup, fn, len(shared), *shared)
        yield from run_tasks(fn, calls, address=address, shared=shared)
    elif workers > 1 and len(calls) > 1:
        yield from _in_processes(fn, calls, workers, shared, setup)
    else:
        prepared = setup(*shared) if setup is not None else None
        for call in calls:
            yield fn(prepared, *call) if setup is not None else fn(*shared, *call)


def _in_processes(
    fn: Callable[..., Any],
    calls: Sequence[tuple[Any, ...]],
    workers: int,
    shared: tuple[Any, ...],
    setup: Callable[..., Any] | None,
) -> Iterator[Any]:
    with ProcessPoolExecutor(
        max_workers=workers, initializer=_start_worker, initargs=(setup, shared)
    ) as pool:
        running: set[Future[Any]] = set()
        errors: list[BaseException] = []

        def results(finished: Iterable[Future[Any]]) -> Iterator[Any]:
            for fut in finished:
                if (e := fut.exception()) is not None:
                    errors.append(e)
                else:
                    yield fut.result()

        for call in calls:
            if len(running) >= 2 * workers:
                finished, running = wait(running, return_when=FIRST_COMPLETED)
                yield from results(finished)
            if errors:
                break
            running.add(pool.submit(_run_in_worker, fn, setup is not None, call))
        yield from results(wait(running).done)
    if errors:
        raise errors[0]


def _start_worker(setup: Callable[..., Any] | None, shared: tuple[Any, ...]) -> None:
    _PREPARED[:] = [setup(*shared) if setup is not None else shared]
    gc.freeze()  # what the worker was started with lives as long as it: never collected


def _run_in_worker(fn: Callable[..., Any], prepared: bool, call: tuple[Any, ...]) -> Any:
    return fn(_PREPARED[0], *call) if prepared else fn(*_PREPARED[0], *call)


def _set_up_in_task(setup: Callable[..., Any], fn: Callable[..., Any], n: int, *args: Any) -> Any:
    """A Ray task's chunk with ``setup``: the first ``n`` arguments are the shared ones."""
    return fn(setup(*args[:n]), *args[n:])
