"""A question's vector while it is still being made: recall starts without it.

memory_search embeds the question in another thread (15–20 ms for the bundled model, more
on a loaded machine) and hands recall a ``QueryVector`` at once: recall reads the facts and
runs the lexical search meanwhile, and waits for the vector only where the dense search
needs it. Past its ``seconds`` or on any failure the vector is None, the reason is logged
once, and recall is lexical.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import time

import numpy

log = logging.getLogger("companion.memory.query_vector")


class QueryVector:
    """The vector ``future`` will hold (of ``dimensions`` numbers), waited for until
    ``seconds`` from now."""

    def __init__(
        self,
        future: concurrent.futures.Future[numpy.ndarray],
        dimensions: int,
        seconds: float,
    ) -> None:
        self.future, self.dimensions, self.seconds = future, dimensions, seconds
        self.deadline = time.monotonic() + seconds
        self._taken = False
        self._vector: numpy.ndarray | None = None

    def get(self) -> numpy.ndarray | None:
        """The vector, waiting for it in this (blocking) thread; None past the deadline or
        on a failure."""
        if not self._taken:
            left = max(0.0, self.deadline - time.monotonic())
            try:
                self._vector = self._checked(self.future.result(timeout=left))
            except concurrent.futures.TimeoutError:
                log.warning("query embedding took over %.1f s; recall is lexical", self.seconds)
            except Exception as error:  # the embedder's EmbeddingUnavailable (providers/)
                log.warning(
                    "query embedding unavailable (%s: %s); recall is lexical",
                    type(error).__name__,
                    error,
                )
            self._taken = True
        return self._vector

    async def wait(self) -> numpy.ndarray | None:
        """``get`` for a coroutine: the event loop is not blocked while it waits."""
        if not self._taken:
            left = max(0.0, self.deadline - time.monotonic())
            with contextlib.suppress(Exception):  # get() says which, and logs it
                await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(self.future)), left)
        return self.get()

    def _checked(self, vector: numpy.ndarray) -> numpy.ndarray | None:
        if vector.shape != (self.dimensions,):
            log.warning(
                "query embedding has shape %s, not (%d,); recall is lexical",
                vector.shape,
                self.dimensions,
            )
            return None
        return vector


def vector_now(vector: numpy.ndarray | QueryVector | None) -> numpy.ndarray | None:
    """The vector itself, waiting for one still being made (blocking)."""
    return vector.get() if isinstance(vector, QueryVector) else vector


async def vector_awaited(vector: numpy.ndarray | QueryVector | None) -> numpy.ndarray | None:
    """The vector itself, awaiting one still being made."""
    return await vector.wait() if isinstance(vector, QueryVector) else vector
