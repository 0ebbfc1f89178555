"""A stand-in replica in its own process, for benchmarks: the seat's own work must not share the client's GIL.

Prints its URL on the first line, serves until stdin closes, then prints its counters as JSON.

    python benchmarks/_standin_process.py '{"slots": 8, "token_time": 0.007, "adapters": {...}}'
"""

from __future__ import annotations

import json
import sys

from voicegate.seat import StandinSeat, default_text


def full_length(model: str, seed: int, prompt: str, max_tokens: int) -> tuple[str, str]:
    """Every answer exactly max_tokens words (the stand-in's own text, continued): a gate's long generations."""
    words = default_text(model, seed, prompt, max_tokens)[0].split()
    more = default_text(model, seed + 1, prompt + " more", max_tokens)[0].split()
    while len(words) < max_tokens:
        words += more
    return " ".join(words[:max_tokens]), "length"


def main() -> None:
    config = json.loads(sys.argv[1])
    if config.pop("full_length", False):
        config["default_generator"] = full_length
    seat = StandinSeat(**config).start()
    print(seat.url, flush=True)
    sys.stdin.read()   # until the benchmark closes our stdin
    print(json.dumps({"peak_in_flight": seat.peak_in_flight, "peak_decoding": seat.peak_decoding,
                      "requests": len(seat.chat_log())}), flush=True)
    seat.stop()


if __name__ == "__main__":
    main()
