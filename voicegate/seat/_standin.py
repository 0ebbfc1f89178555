"""A stand-in seat: an in-process HTTP server that answers like vLLM's OpenAI API.

It is for fast tests, the demo and `voicegate seat simulate`: no model, but the
same routes, status codes and bodies a real vLLM 0.32 seat gives (measured in
``shared/docs/VLLM-CPU.md``), deterministic text from (model, seed, prompt), a
fixed number of decode slots, a time per token and a prefill time per model, streamed
answers (``stream: true``: server-sent events, one token a chunk, as vLLM sends them),
``ignore_eos`` (decode all ``max_tokens``), and fault injection
(every k-th request 500s, 429s or stalls, or its body trickles in a byte at a
time; a restart drops runtime-loaded adapters, as a real `compose up -d` does).

``wrong_weights_every=k`` is the seat-integrity fault: every k-th chat
request that arrives while another model is in flight is answered with that
other model's "weights" -- its generator's text for the same (seed, prompt) --
while the reply still echoes the requested ``model``. That is what vLLM CPU has
been measured to do with base and adapters mixed in a batch. The text depends on
the model (``default_text`` hashes it in), so the fault is detectable.

The faults a seat can show that a canary must not slip past, each a knob:

- ``sampled_only=True``: the faults above and ``foreign_every`` hit only requests with
  temperature > 0 (the real ones, when canaries were greedy);
- ``foreign_every=k``: every k-th chat request is answered with weights of no arm
  (stale or unknown: its text is no arm's);
- ``impostors={"lv-x": "lv-y"}``: ``lv-x`` is answered with ``lv-y``'s weights under
  ``lv-x``'s name and root (a replica that serves another adapter);
- ``sticky_after_switch=k``: when a request for another model arrives at an idle seat,
  the first k requests of that model are answered with the previous model's weights;
- ``late_after=n``: every chat request after the n-th is answered with weights of no arm;
- ``faults_from=n``: the faults above spare the first n chat requests (a seat that answers
  the integrity references right and misbehaves afterwards).

Issue 35's seats, which the reproduction of @2's canaries could not tell from clean ones:

- ``repeats_right=True`` (with ``faults_from``): a seat, or a response cache in front of one, that
  serves the right weights only for a request it has seen before (the same model, messages, seed
  and sampling, ``max_tokens`` included, as a cache keys them); every first ask is answered with
  the next served model's weights (base, then the adapters in name order, round);
- ``repeats_by_cell=True`` (with ``repeats_right``): "seen before" is keyed by the request without its model
  and ``max_tokens`` (a prefix cache that ignores the adapter): the first arm asked a cell (prompt, seed,
  sampling) gets the next served model's weights, every later arm of that cell its own -- a seat mixing arms
  on first-time requests only, about a third of a gate's rows;
- ``even_seeds_only=True``: the faults above hit only requests whose seed is even (a fault tied
  to cells: half of a gate's cells, never the others).

    with StandinSeat(adapters={"lv-x-ckpt475": "/adapters/x/ckpt475"}) as seat:
        seat.url   # http://127.0.0.1:PORT/v1

Text generators are pluggable per model: ``generators={"lv-x": fn}`` where
``fn(model, seed, prompt, max_tokens)`` returns the text (or ``(text,
finish_reason)``). The completion's token count is its whitespace word count.

Timing: a request waits ``request_overhead`` + its model's prefill time, then each token
takes its model's time per token; a streamed answer sends each token when it is done, so
a client sees the time to first token and the time per output token apart.

Over 400 lines because it imitates one server: the HTTP handler, vLLM's streaming, the adapter
endpoints and every fault knob share one lock and one state.
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

Generator = Callable[[str, int, str, int], "str | tuple[str, str]"]

_WORDS = [
    "the", "of", "and", "to", "a", "in", "was", "her", "it", "that", "she", "he", "his", "had", "with", "as",
    "for", "you", "not", "be", "at", "on", "but", "is", "my", "all", "him", "so", "have", "which", "they",
    "by", "would", "from", "were", "this", "me", "said", "one", "there", "no", "been", "could", "an", "if",
    "when", "what", "or", "very", "we", "their", "are", "more", "them", "some", "little", "must", "will",
    "then", "now", "any", "who", "do", "should", "much", "time", "into", "such", "out", "than", "only",
    "before", "might", "house", "mother", "sister", "morning", "letter", "river", "door", "window", "evening",
    "face", "hand", "heart", "mind", "voice", "night", "road", "room",
]


def default_text(model: str, seed: int, prompt: str, max_tokens: int) -> tuple[str, str]:
    """Deterministic pseudo-prose from (model, seed, prompt): 20-60 words, cut at max_tokens."""
    digest = hashlib.sha256(f"{model}\0{seed}\0{prompt}".encode()).digest()
    state = int.from_bytes(digest, "big")
    n = 20 + state % 41
    words: list[str] = []
    for i in range(min(n, max_tokens)):
        block = hashlib.sha256(digest + i.to_bytes(4, "big")).digest()
        words.append(_WORDS[int.from_bytes(block[:4], "big") % len(_WORDS)])
    text = " ".join(words).capitalize() + ("." if n <= max_tokens else "")
    return text, ("stop" if n <= max_tokens else "length")


def late_divergence(rate: float) -> Callable[[str, int, str, int], tuple[str, str]]:
    """`default_text`, nearly repeatable: `rate` of the answers diverge at a word in their last third.

    vLLM's seeded sampling repeats on the same weights; a batch-shape difference can flip a near-tie
    token late in an answer. This is that seat, for the integrity check's false-alarm tests and sweeps.
    """
    import random

    def generate(model: str, seed: int, prompt: str, max_tokens: int) -> tuple[str, str]:
        text, finish = default_text(model, seed, prompt, max_tokens)
        words = text.split()
        if len(words) > 6 and random.random() < rate:
            cut = random.randint(2 * len(words) // 3, len(words) - 1)
            tail = default_text(f"{model}~{random.random()}", seed, prompt, max_tokens)[0].split()
            words = words[:cut] + tail[cut:len(words)]
        return " ".join(words), finish

    return generate


def _pad_to(text: str, model: str, seed: int, max_tokens: int) -> str:
    """``ignore_eos``: go on past the generator's end, deterministically, to exactly max_tokens words."""
    words = text.split()
    more: list[str] = []
    digest = hashlib.sha256(f"{model}\0{seed}\0more".encode()).digest()
    for i in range(max_tokens - len(words)):
        block = hashlib.sha256(digest + i.to_bytes(4, "big")).digest()
        more.append(_WORDS[int.from_bytes(block[:4], "big") % len(_WORDS)])
    return " ".join(words[:max_tokens] + more)


class Stream:
    """A streamed answer: the handler sends each piece as one HTTP/1.1 chunk as soon as it is yielded."""

    def __init__(self, pieces: Iterator[bytes]):
        self.pieces = pieces


def _sse(payload: dict[str, Any] | str) -> bytes:
    return f"data: {payload if isinstance(payload, str) else json.dumps(payload)}\n\n".encode()


def _error(message: str, type_: str, code: int, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


class _QuietServer(ThreadingHTTPServer):
    """A client that hangs up mid-request (a timeout, a killed run: the faults the stand-in exists for) is not
    an error of the seat's: socketserver would print its traceback to stderr, into the caller's output."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


class StandinSeat:
    """A vLLM-shaped seat on 127.0.0.1. Every knob is a plain attribute and may change mid-run."""

    def __init__(
        self,
        *,
        base: str = "voices-base",
        base_root: str = "/models/voices-base",
        adapters: dict[str, str] | None = None,
        generators: dict[str, Generator] | None = None,
        default_generator: Generator = default_text,
        slots: int = 8,
        token_time: float = 0.0,
        token_time_by_model: dict[str, float] | None = None,
        request_overhead: float = 0.0,
        prefill_time: float = 0.0,
        prefill_time_by_model: dict[str, float] | None = None,
        runtime_lora: bool = True,
        check_paths: bool = False,
        version: str = "0.32.0+standin",
        api_key: str | None = None,
        fail_every: int | None = None,
        rate_limit_every: int | None = None,
        retry_after: float = 0.0,
        timeout_every: int | None = None,
        timeout_delay: float = 5.0,
        trickle_s: float = 0.0,
        wrong_weights_every: int | None = None,
        sampled_only: bool = False,
        foreign_every: int | None = None,
        impostors: dict[str, str] | None = None,
        sticky_after_switch: int = 0,
        late_after: int | None = None,
        faults_from: int = 0,
        repeats_right: bool = False,
        repeats_by_cell: bool = False,
        even_seeds_only: bool = False,
        fault_paths: tuple[str, ...] = ("/v1/chat/completions",),
        hooks: dict[int, Callable[[StandinSeat], None]] | None = None,
        max_model_len: int = 4096,
        host: str = "127.0.0.1",
        port: int = 0,
    ):
        self.base = base
        self.base_root = base_root
        self.lora_modules = dict(adapters or {})   # persistent: survive restart()
        self.runtime: dict[str, str] = {}           # runtime-loaded: gone after restart()
        self.generators = dict(generators or {})
        self.default_generator = default_generator
        self.slots = slots
        self.token_time = token_time
        self.token_time_by_model = dict(token_time_by_model or {})
        self.request_overhead = request_overhead
        self.prefill_time = prefill_time
        self.prefill_time_by_model = dict(prefill_time_by_model or {})
        self.runtime_lora = runtime_lora
        self.check_paths = check_paths
        self.version = version
        self.api_key = api_key
        self.fail_every = fail_every
        self.rate_limit_every = rate_limit_every
        self.retry_after = retry_after
        self.timeout_every = timeout_every
        self.timeout_delay = timeout_delay
        # Seconds between the bytes of a faultable route's body: every read is quick, the whole answer slow.
        self.trickle_s = trickle_s
        self.wrong_weights_every = wrong_weights_every
        self.sampled_only = sampled_only
        self.foreign_every = foreign_every
        self.impostors = dict(impostors or {})
        self.sticky_after_switch = sticky_after_switch
        self.late_after = late_after
        self.faults_from = faults_from
        self.repeats_right = repeats_right
        self.repeats_by_cell = repeats_by_cell
        self.even_seeds_only = even_seeds_only
        self._asked: set[str] = set()               # repeats_right: the requests seen so far
        self.chat_requests = 0                       # chat requests decoded so far
        self._eligible = 0                           # ... of them the faults may hit (sampled_only: sampled ones)
        self._eligible_shared = 0
        self._active: str | None = None              # whose weights the seat holds (sticky_after_switch)
        self._switch: tuple[str, str] | None = None  # (old, new) while a switch is pending
        self._switch_left = 0
        self.models_in_flight: dict[str, int] = {}   # model -> chat requests of it in flight now
        self.shared_requests = 0                     # chat requests that arrived with another model in flight
        self.wrong_served = 0                        # ... and were answered with another model's weights
        self.fault_paths = fault_paths
        self.hooks = dict(hooks or {})              # n -> fn(seat), run before the n-th faultable request
        self.max_model_len = max_model_len
        self.host = host
        self._port = port
        self._lock = threading.Lock()
        self._slot_sem = threading.BoundedSemaphore(slots)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.log: list[dict[str, Any]] = []
        self.counts: dict[str, int] = {}
        self.in_flight = 0
        self.peak_in_flight = 0
        self.decoding = 0
        self.peak_decoding = 0
        self.restarts = 0
        self.dead = False                           # kill(): connections drop unanswered
        self.created = int(time.time())

    # -- lifecycle ---------------------------------------------------------------

    def start(self) -> Self:
        seat: StandinSeat = self

        class Handler(_Handler):
            owner = seat

        self._server = _QuietServer((self.host, self._port), Handler)
        self._server.daemon_threads = True
        self._port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="standin-seat", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def serve_forever(self) -> None:
        """Block until interrupted (for a command that runs a stand-in seat in the foreground)."""
        self.start()
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
        finally:
            self.stop()

    def kill(self) -> None:
        """What SIGKILL does to a vLLM process: nothing listens, and every request in flight drops unanswered."""
        self.dead = True
        self.stop()

    def restart(self) -> None:
        """What `compose up -d` does to adapters: only the --lora-modules ones come back."""
        with self._lock:
            self.runtime.clear()
            self.restarts += 1

    @property
    def port(self) -> int:
        return self._port

    @property
    def root(self) -> str:
        return f"http://{self.host}:{self._port}"

    @property
    def url(self) -> str:
        return f"{self.root}/v1"

    # -- what it serves ------------------------------------------------------------

    def served(self) -> dict[str, str]:
        with self._lock:
            return {**self.lora_modules, **self.runtime}

    def models_payload(self) -> dict[str, Any]:
        def card(mid: str, root: str, parent: str | None) -> dict[str, Any]:
            return {"id": mid, "object": "model", "created": self.created, "owned_by": "vllm", "root": root,
                    "parent": parent, "max_model_len": self.max_model_len, "permission": []}

        data = [card(self.base, self.base_root, None)]
        data += [card(name, root, self.base) for name, root in self.served().items()]
        return {"object": "list", "data": data}

    def chat_log(self) -> list[dict[str, Any]]:
        with self._lock:
            return [e for e in self.log if e["path"] == "/v1/chat/completions"]

    def requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.log)

    # -- request handling (called from handler threads) --------------------------------

    def _count(self, path: str) -> int:
        with self._lock:
            self.counts[path] = self.counts.get(path, 0) + 1
            return self.counts[path]

    def _faultable_count(self, path: str) -> int | None:
        if path not in self.fault_paths:
            return None
        with self._lock:
            self.counts["faultable"] = self.counts.get("faultable", 0) + 1
            return self.counts["faultable"]

    def handle(self, method: str, path: str, headers: Any, body: bytes) -> tuple[int, Any, dict[str, str]]:
        """(status, payload (dict -> JSON, str -> text/plain), extra headers)."""
        self._count(path)
        entry: dict[str, Any] = {"time": time.monotonic(), "method": method, "path": path, "model": None,
                                 "sent_key": headers.get("Authorization") is not None}
        if (path.startswith("/v1/") and self.api_key is not None
                and headers.get("Authorization") != f"Bearer {self.api_key}"):
            self._record(entry, 401)
            return 401, _error("Unauthorized", "AuthenticationError", 401), {}
        n = self._faultable_count(path)
        if n is not None:
            hook = self.hooks.get(n)
            if hook is not None:
                hook(self)
            if self.fail_every and n % self.fail_every == 0:
                self._record(entry, 500)
                return 500, _error(f"injected fault on request {n}", "InternalServerError", 500), {}
            if self.rate_limit_every and n % self.rate_limit_every == 0:
                self._record(entry, 429)
                return 429, _error("Too many requests", "RateLimitError", 429), {"Retry-After": f"{self.retry_after:g}"}
            if self.timeout_every and n % self.timeout_every == 0:
                time.sleep(self.timeout_delay)
        try:
            data = json.loads(body) if body else {}
        except ValueError:
            data = None
        if method == "GET" and path == "/health":
            return self._record(entry, 200), "", {}
        if method == "GET" and path == "/version":
            return self._record(entry, 200), {"version": self.version}, {}
        if method == "GET" and path == "/v1/models":
            return self._record(entry, 200), self.models_payload(), {}
        if method == "POST" and path in ("/v1/load_lora_adapter", "/v1/unload_lora_adapter"):
            return self._lora(entry, path, data)
        if method == "POST" and path == "/v1/chat/completions":
            return self._chat(entry, data)
        self._record(entry, 404)
        return 404, {"detail": "Not Found"}, {}

    def _record(self, entry: dict[str, Any], status: int) -> int:
        entry["status"] = status
        with self._lock:
            self.log.append(entry)
        return status

    def _lora(self, entry: dict[str, Any], path: str, data: Any) -> tuple[int, Any, dict[str, str]]:
        if not self.runtime_lora:
            # The routes are not mounted at all when VLLM_ALLOW_RUNTIME_LORA_UPDATING is off.
            return self._record(entry, 404), {"detail": "Not Found"}, {}
        name = data.get("lora_name") if isinstance(data, dict) else None
        entry["model"] = name
        if not isinstance(name, str) or not name:
            return self._record(entry, 400), _error("lora_name: Field required", "Bad Request", 400), {}
        if path.endswith("/load_lora_adapter"):
            lora_path = data.get("lora_path")
            if not isinstance(lora_path, str) or not lora_path:
                return self._record(entry, 400), _error("lora_path: Field required", "Bad Request", 400), {}
            with self._lock:
                known = name in self.runtime or name in self.lora_modules
            if known:
                return self._record(entry, 400), _error(
                    f"The lora adapter '{name}' has already been loaded. If you want to load the adapter in "
                    "place, set 'load_inplace' to True.", "InvalidUserInput", 400), {}
            if self.check_paths and not (Path(lora_path) / "adapter_config.json").is_file():
                return self._record(entry, 404), _error(
                    f"Loading lora {name} failed: No adapter found for {lora_path}", "NotFoundError", 404), {}
            with self._lock:
                self.runtime[name] = lora_path
            return self._record(entry, 200), f"Success: LoRA adapter '{name}' added successfully.", {}
        with self._lock:
            removed = self.runtime.pop(name, None) or self.lora_modules.pop(name, None)
        if removed is None:
            return self._record(entry, 404), _error(f"The lora adapter '{name}' cannot be found.",
                                                    "NotFoundError", 404), {}
        return self._record(entry, 200), f"Success: LoRA adapter '{name}' removed successfully.", {}

    def _chat(self, entry: dict[str, Any], data: Any) -> tuple[int, Any, dict[str, str]]:
        if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
            return self._record(entry, 400), _error("messages: Field required", "BadRequestError", 400), {}
        model = data.get("model")
        entry["model"] = model
        served = self.served()
        if model != self.base and model not in served:
            aliases = ", ".join([self.base, *served])
            return self._record(entry, 404), _error(
                f"The model `{model}` does not exist. Valid aliases: {aliases}.", "NotFoundError", 404, "model"), {}
        max_tokens = int(data.get("max_tokens") or 16)
        if max_tokens > self.max_model_len:
            return self._record(entry, 400), _error(
                f"'max_tokens' is too large: {max_tokens}. This model's maximum context length is "
                f"{self.max_model_len} tokens.", "BadRequestError", 400), {}
        seed = int(data.get("seed") or 0)
        stream = data.get("stream") is True
        options = data.get("stream_options")
        include_usage = stream and isinstance(options, dict) and options.get("include_usage") is True
        ignore_eos = data.get("ignore_eos") is True
        prompt = "\n".join(str(m.get("content", "")) for m in data["messages"] if isinstance(m, dict))
        prompt_tokens = len(prompt.split()) + 4
        with self._lock:
            entry["seed"] = seed
            entry["stream"] = stream
        if stream:
            self._record(entry, 200)
            return 200, Stream(self._stream(model, seed, prompt, max_tokens, ignore_eos, include_usage,
                                            prompt_tokens, _temperature(data), _request_key(data))), {}
        with self._decoding(entry, model, _temperature(data), seed, _request_key(data)) as served_as:
            # The weights that answer: the requested model's, unless the fault swapped them.
            text, finish, tokens = self._generate(served_as, seed, prompt, max_tokens, ignore_eos)
            entry["tokens"] = tokens
            delay = self._ttft(model) + tokens * self._per_token(model)
            if delay > 0:
                time.sleep(delay)
        self._record(entry, 200)
        return 200, {
            "id": f"chatcmpl-standin-{self.counts.get('/v1/chat/completions', 0)}",
            "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": finish, "stop_reason": None}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": tokens,
                      "total_tokens": prompt_tokens + tokens},
        }, {}

    def _per_token(self, model: str) -> float:
        return self.token_time_by_model.get(model, self.token_time)

    def _ttft(self, model: str) -> float:
        """Before the first token's own decode time: the request's overhead and the prompt's prefill."""
        return self.request_overhead + self.prefill_time_by_model.get(model, self.prefill_time)

    def _generate(self, model: str, seed: int, prompt: str, max_tokens: int,
                  ignore_eos: bool) -> tuple[str, str, int]:
        gen = self.generators.get(model, self.default_generator)
        out = gen(model, seed, prompt, max_tokens)
        text, finish = out if isinstance(out, tuple) else (out, None)
        if ignore_eos and len(text.split()) < max_tokens:
            text, finish = _pad_to(text, model, seed, max_tokens), "length"
        tokens = len(text.split())
        if finish is None:
            finish = "length" if tokens >= max_tokens else "stop"
        return text, finish, tokens

    def _eligible_now(self, temperature: float, seed: int) -> bool:
        return ((temperature > 0 or not self.sampled_only) and self.chat_requests > self.faults_from
                and (seed % 2 == 0 or not self.even_seeds_only))

    def _weights(self, model: str, temperature: float, seed: int = 0, key: str = "") -> str:
        """Before the request counts as in flight (under the lock): the weights the switch-time faults give it."""
        served_as = self.impostors.get(model, model)
        self.chat_requests += 1
        eligible = self._eligible_now(temperature, seed)
        if self.repeats_right:
            if self.repeats_by_cell and key:
                key = json.dumps({k: v for k, v in json.loads(key).items() if k not in ("model", "max_tokens")},
                                 sort_keys=True)
            seen = key in self._asked
            self._asked.add(key)
            if eligible and not seen:
                names = [self.base, *sorted({**self.lora_modules, **self.runtime})]  # under the lock already
                served_as = names[(names.index(model) + 1) % len(names)] if model in names else served_as
                self.wrong_served += served_as != model
        if eligible:
            self._eligible += 1
        if self.sticky_after_switch:
            if (self._switch is None and self.in_flight == 0 and self._active is not None
                    and model != self._active and self.chat_requests > self.faults_from):
                self._switch, self._switch_left = (self._active, model), self.sticky_after_switch
            if self._switch is not None and model == self._switch[1]:
                served_as = self.impostors.get(self._switch[0], self._switch[0])
                self.wrong_served += 1
                self._switch_left -= 1
                if self._switch_left <= 0:
                    self._switch, self._active = None, model
            elif self._switch is None:
                self._active = model
        late = self.late_after is not None and self.chat_requests > self.late_after
        foreign = bool(eligible and self.foreign_every and self._eligible % self.foreign_every == 0)
        if late or foreign:
            served_as = f"{model}~stale"
            self.wrong_served += 1
        return served_as

    @contextmanager
    def _decoding(self, entry: dict[str, Any] | None, model: str, temperature: float = 1.0, seed: int = 0,
                  key: str = "") -> Iterator[str]:
        """In flight, then (beyond the seat's slots it waits, as vLLM queues beyond --max-num-seqs) decoding.

        Yields the model whose weights answer: `model`, unless a fault swaps in another model in
        flight at the same moment, or weights of no arm (the echoed name stays `model`).
        """
        with self._lock:
            served_as = self._weights(model, temperature, seed, key)
            eligible = self._eligible_now(temperature, seed)
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            others = sorted(m for m, n in self.models_in_flight.items() if n > 0 and m != model)
            self.models_in_flight[model] = self.models_in_flight.get(model, 0) + 1
            if others:
                self.shared_requests += 1
                k = self.wrong_weights_every
                if eligible:
                    self._eligible_shared += 1
                    if k and self._eligible_shared % k == 0:
                        served_as = others[(self._eligible_shared // k) % len(others)]
                        self.wrong_served += 1
            if entry is not None:
                entry["in_flight"] = self.in_flight
                if others:
                    entry["shared_with"] = others
                entry["served_as"] = served_as
        try:
            with self._slot_sem:
                with self._lock:
                    self.decoding += 1
                    self.peak_decoding = max(self.peak_decoding, self.decoding)
                try:
                    yield served_as
                finally:
                    with self._lock:
                        self.decoding -= 1
        finally:
            with self._lock:
                self.in_flight -= 1
                self.models_in_flight[model] -= 1

    def _stream(self, model: str, seed: int, prompt: str, max_tokens: int, ignore_eos: bool,
                include_usage: bool, prompt_tokens: int, temperature: float = 1.0, key: str = "") -> Iterator[bytes]:
        """vLLM's chat stream: a role chunk, one chunk per token, the finish chunk, usage, ``[DONE]``.

        Token i is sent at ttft + (i+1) x per-token time after the request started decoding (sleeping to
        that deadline, so small sleeps' overshoot does not add up over a long answer).
        """
        cid = f"chatcmpl-standin-{self.counts.get('/v1/chat/completions', 0)}"
        created = int(time.time())

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            return _sse({"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                         "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish,
                                      **({"stop_reason": None} if finish else {})}]})

        with self._decoding(None, model, temperature, seed, key) as served_as:
            text, finish, tokens = self._generate(served_as, seed, prompt, max_tokens, ignore_eos)
            ttft, per_token = self._ttft(model), self._per_token(model)
            t0 = time.monotonic()
            for i, word in enumerate(text.split()):
                wait = t0 + ttft + (i + 1) * per_token - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                if i == 0:
                    yield chunk({"role": "assistant", "content": ""})
                yield chunk({"content": word if i == 0 else " " + word})
        yield chunk({"content": ""}, finish)
        if include_usage:
            yield _sse({"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                        "choices": [], "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": tokens,
                                                 "total_tokens": prompt_tokens + tokens}})
        yield _sse("[DONE]")


def _request_key(data: dict[str, Any]) -> str:
    """What a response cache keys on: the whole request but the stream flags."""
    return json.dumps({k: v for k, v in data.items() if k not in ("stream", "stream_options")}, sort_keys=True)


def _temperature(data: dict[str, Any]) -> float:
    t = data.get("temperature")
    return float(t) if isinstance(t, int | float) and not isinstance(t, bool) else 1.0


class _Handler(BaseHTTPRequestHandler):
    owner: StandinSeat
    protocol_version = "HTTP/1.1"  # keep-alive, as clients expect from vLLM's uvicorn
    # Headers and body are small separate writes: with Nagle on, each answer waits ~40 ms
    # for the client's delayed ACK, which would dwarf the decode time being simulated.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the seat keeps its own log
        pass

    def _drop(self) -> None:
        """A killed seat answers nothing: the connection closes under the client."""
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _serve(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        path = self.path.split("?", 1)[0]
        if self.owner.dead:
            self._drop()
            return
        status, payload, extra = self.owner.handle(method, path, self.headers, body)
        if self.owner.dead:
            self._drop()
            return
        if isinstance(payload, Stream):
            self._send_stream(status, payload)
            return
        if isinstance(payload, str):
            data, ctype = payload.encode(), "text/plain; charset=utf-8"
        else:
            data, ctype = json.dumps(payload).encode(), "application/json"
        try:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            for k, v in extra.items():
                self.send_header(k, v)
            self.end_headers()
            if self.owner.trickle_s > 0 and path in self.owner.fault_paths:
                for i in range(len(data)):
                    self.wfile.write(data[i:i + 1])
                    self.wfile.flush()
                    time.sleep(self.owner.trickle_s)
            else:
                self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (e.g. its timeout fired during an injected stall)

    def _send_stream(self, status: int, stream: Stream) -> None:
        """Server-sent events in chunked transfer encoding, each piece flushed as it comes."""
        try:
            self.send_response(status)
            self.send_header("Content-Type", "text/event-stream; charset=utf-8")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for piece in stream.pieces:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            close = getattr(stream.pieces, "close", None)
            if close is not None:
                close()   # a client that left mid-answer frees its decode slot

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")
