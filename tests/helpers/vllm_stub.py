"""A stub `vllm`: the stand-in seat behind vLLM's command line, for tests where a real server is not the subject.

`voicegate.seat._vllm.start_vllm` runs ``<venv>/bin/python -m vllm.entrypoints.openai.api_server --model M
--served-model-name B --port P ... --lora-modules NAME=DIR ...``; ``tests/vllm_seat.stub_venv`` makes a venv
whose python runs this file with those arguments. It serves `voicegate.seat.StandinSeat` on 127.0.0.1:P
(the base's root is ``stub:`` + --model, the --lora-modules adapters listed, runtime loads checked for
adapter_config.json as vLLM checks them) until SIGTERM or SIGINT, as vLLM does; it says "vllm stub" and its
whole command line in its log. Like vLLM's HTTP server, on SIGTERM it waits for the requests in flight to
finish before it exits (what made `seat up`'s stop take 30 s with a request in flight).
``VLLM_STUB_TOKEN_TIME`` (seconds per token, default 0) slows its answers, for a test that needs a run to last.

Its text is the stand-in's pseudo-prose, not the carrier's: a root naming the carrier's directory would be a
seat claiming weights it does not serve, which `generate` checks (the base's greedy answers against the
carrier's own files, `generate._carrier_files`) and fails. So the root says what it is.
"""

from __future__ import annotations

import os
import shlex
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))   # start_vllm drops PYTHONPATH: this tree's voicegate


def _args(argv: list[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    key = None
    for a in argv:
        if a.startswith("--"):
            key = a
            found.setdefault(key, [])
        elif key is not None:
            found[key].append(a)
    return found


def main(argv: list[str]) -> None:
    from voicegate.seat._standin import StandinSeat

    args = _args(argv)
    adapters = dict(item.split("=", 1) for item in args.get("--lora-modules", []))
    seat = StandinSeat(base=(args.get("--served-model-name") or ["voices-base"])[0],
                       base_root="stub:" + (args.get("--model") or ["/model"])[0], adapters=adapters,
                       check_paths=True, max_model_len=int((args.get("--max-model-len") or ["512"])[0]),
                       host=(args.get("--host") or ["127.0.0.1"])[0], port=int(args["--port"][0]),
                       token_time=float(os.environ.get("VLLM_STUB_TOKEN_TIME", "0")))

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    seat.start()
    print(f"vllm stub: {seat.base} + {sorted(adapters)} on port {args['--port'][0]}", flush=True)
    print(f"vllm stub argv: {shlex.join(argv)}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        while seat.in_flight > 0:   # vLLM's server drains what is in flight before it exits
            time.sleep(0.05)
    finally:
        seat.stop()


if __name__ == "__main__":
    argv = sys.argv[1:]
    if argv[:2] == ["-m", "vllm.entrypoints.openai.api_server"]:
        argv = argv[2:]
    main(argv)
