"""The prebuilt engine's server process: xllamacpp's llama.cpp server, outside the app.

xllamacpp (a prebuilt CPU wheel, no compiler) runs upstream llama.cpp's server inside the
Python process that creates it, with its own loopback HTTP listener. A crash in native
code would take that process down, so ``providers.llama_server`` runs it here, as a child
(``python -m providers.llama_engine --model FILE --port N``), and supervises it like any
server process: this process only loads the model, serves, and waits for SIGTERM.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading

from providers.llama_server import SERVED_NAME


def serve(model: str, port: int, n_ctx: int) -> None:
    """Load ``model`` and serve it on 127.0.0.1:``port`` until SIGTERM or SIGINT."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = model
    params.model_alias = {SERVED_NAME}
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.n_ctx = n_ctx
    # llama-cpp-python's server's threads: half the cores generate (on a small shared
    # machine a second generating thread waits on a busy core more than it helps),
    # all of them process the prompt.
    cores = os.cpu_count() or 1
    params.cpuparams.n_threads = max(cores // 2, 1)
    params.cpuparams_batch.n_threads = cores
    # One slot: a second session's request waits its turn; the slot's prompt is kept in
    # RAM (cache_ram_mib), so sessions taking turns do not recompute each other's prefix.
    params.n_parallel = 1
    params.use_jinja = True  # the model's own chat template, as upstream's --jinja
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    server = xllamacpp.Server(params)
    print(f"serving {model} at {server.listening_address}", flush=True)
    stop.wait()


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments ``providers.llama_server`` passes and serve."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--n-ctx", type=int, default=8192)
    args = parser.parse_args(argv)
    serve(args.model, args.port, args.n_ctx)
    return 0


if __name__ == "__main__":
    sys.exit(main())
