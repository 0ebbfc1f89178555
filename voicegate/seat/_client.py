"""An async client for one vLLM seat's OpenAI-compatible API.

The seat is given by its OpenAI base URL (``http://host:8027/v1``); ``/health``
and ``/version`` live at the root, so they are reached by stripping ``/v1``.

Faults are expected, not exceptional: connection errors, timeouts and 5xx are
retried with exponential backoff and jitter; 429 and 503 also pause every
other request of this client (the seat is saying it is full, so sending more
would only lengthen the queue). Each request has a budget of attempts and
seconds; when it is spent the request raises ``SeatUnreachable`` (exit 3).
Answers that retrying cannot change (unknown model, bad adapter path, a refused
key) raise a ``SeatError`` (exit 2) with a one-line message.

A chat answer is checked before it is believed: strict JSON (no NaN), the text a
string, the echoed ``model`` the requested one, ``finish_reason`` a string or
null, ``usage`` whole token counts. An answer that fails is a seat fault like a
5xx: retried under the same policy, and never returned (so never stored).
``timeout`` is a deadline for the whole request, connect to last byte: a body
that trickles in a byte at a time is cut off when it runs out, not per read.

The API key is only ever held in memory and sent as a Bearer header.

Over 400 lines because retries, streaming, the whole-request deadline and the error mapping all act
on one request's life and share its state.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from collections.abc import Awaitable, Callable, Coroutine
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Protocol, Self, TypeVar, cast
from urllib.parse import urlsplit, urlunsplit

import httpx

from voicegate import _json as strict_json
from voicegate._errors import SeatUnreachable, VoicegateError
from voicegate.run import USAGE_KEYS, finish_reason_problem, usage_problem
from voicegate.seat._errors import SeatError, error_for


class Turns(Protocol):
    """One model at a time on a seat shared by runs (`seat._turns.SeatTurns`; a protocol here because the turns
    sit above the leases, which read this module's cards)."""

    def hold(self, model: str) -> AbstractAsyncContextManager[None]: ...

T = TypeVar("T")

# connect/read/write/pool errors, every timeout, a body that does not decode (e.g. broken gzip)
_RETRY_EXC = (httpx.TransportError, httpx.DecodingError)


class BadAnswer(Exception):
    """A 2xx answer that is not what the route promises: a seat fault, retried like a 5xx."""


@dataclass(frozen=True)
class RetryPolicy:
    """Per request: up to ``attempts`` tries within ``budget_s`` seconds, delays doubling from ``base_s``.

    ``refused_budget_s``: the seconds a request keeps retrying "connection refused" from a seat that has
    answered this client before. Nothing listens there any more: the seat went down (a crash, a stop),
    and a vLLM restart takes longer than this on any hardware, so the run stops soon and says so (it
    resumes where it stopped) instead of retrying silently for the full budget (79 s).
    """

    attempts: int = 8
    base_s: float = 0.5
    max_delay_s: float = 30.0
    budget_s: float = 300.0
    refused_budget_s: float = 10.0

    def delay(self, attempt: int, rng: random.Random) -> float:
        """Equal jitter: half the exponential step fixed, half random, so retries do not march in step."""
        step = min(self.max_delay_s, self.base_s * 2.0 ** (attempt - 1))
        return step / 2 + rng.uniform(0, step / 2)


@dataclass(frozen=True)
class ModelCard:
    id: str
    root: str | None
    parent: str | None

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "root": self.root, "parent": self.parent}


@dataclass(frozen=True)
class Completion:
    text: str
    finish_reason: str | None
    usage: dict[str, int] | None
    latency_s: float


@dataclass(frozen=True)
class StreamedCompletion:
    """A streamed chat answer and when its pieces came, in seconds after the request went out.

    ``first_token_s`` is the time to first token (TTFT); ``last_token_s`` when the last token
    came. vLLM's serving benchmark measures decode speed between the two: time per output
    token = (last − first) / (completion_tokens − 1).
    """

    text: str
    finish_reason: str | None
    usage: dict[str, int] | None
    first_token_s: float
    last_token_s: float
    latency_s: float
    chunks: int

    @property
    def completion_tokens(self) -> int:
        return int((self.usage or {}).get("completion_tokens") or 0)

    @property
    def tpot_s(self) -> float | None:
        """Time per output token after the first; None when fewer than two tokens came."""
        n = self.completion_tokens
        return (self.last_token_s - self.first_token_s) / (n - 1) if n >= 2 else None


def parse_chat_stream(lines: list[tuple[float, str]], model: str,
                      latency_s: float) -> StreamedCompletion:
    """A chat answer streamed as server-sent events (``data: {json}`` lines, ``data: [DONE]`` last).

    `lines` are (seconds since the request went out, line). Anything that is not vLLM's chunk
    shape raises BadAnswer, like a malformed unstreamed answer.
    """
    text: list[str] = []
    reason: str | None = None
    usage: Any = None
    first: float | None = None
    last: float | None = None
    chunks = 0
    done = False
    for t, line in lines:
        line = line.strip()
        if not line or line.startswith(":"):
            continue   # keep-alive comments
        if done:
            raise BadAnswer("data after [DONE]")
        if not line.startswith("data:"):
            if line.startswith(("event:", "id:", "retry:")):
                continue
            raise BadAnswer(f"not a server-sent event line: {line[:60]!r}")
        payload = line[5:].strip()
        if payload == "[DONE]":
            done = True
            continue
        try:
            data = strict_json.loads(payload)
        except ValueError as exc:
            raise BadAnswer(f"a stream chunk is not strict JSON ({exc})") from None
        if not isinstance(data, dict):
            raise BadAnswer("a stream chunk is not a JSON object")
        if "error" in data:
            err = data["error"]
            msg = err.get("message") if isinstance(err, dict) else err
            raise BadAnswer(f"the stream broke off with an error: {str(msg)[:200]}")
        if data.get("model") != model:
            raise BadAnswer(f"a stream chunk names model {data.get('model')!r:.80}, not the requested {model!r}")
        chunks += 1
        if data.get("usage") is not None:
            usage = data["usage"]
        choices = data.get("choices")
        if not isinstance(choices, list):
            raise BadAnswer("a stream chunk has no choices list")
        if not choices:
            continue
        choice = choices[0]
        if not isinstance(choice, dict) or not isinstance(choice.get("delta"), dict):
            raise BadAnswer("a stream chunk has no choices[0].delta")
        content = choice["delta"].get("content")
        if content is not None and not isinstance(content, str):
            raise BadAnswer("a stream chunk's delta.content is not a string")
        if content:
            text.append(content)
            first = t if first is None else first
            last = t
        if choice.get("finish_reason") is not None:
            reason = choice["finish_reason"]
    if not done:
        raise BadAnswer("the stream ended without data: [DONE]")
    for problem in (finish_reason_problem(reason), usage_problem(usage)):
        if problem is not None:
            raise BadAnswer(problem)
    if first is None or last is None:
        raise BadAnswer("the stream carried no token")
    kept = None if usage is None else {k: int(usage[k]) for k in USAGE_KEYS if usage.get(k) is not None}
    return StreamedCompletion(text="".join(text), finish_reason=reason, usage=kept, first_token_s=first,
                              last_token_s=last, latency_s=latency_s, chunks=chunks)


def parse_chat_answer(content: bytes, model: str) -> tuple[str, str | None, dict[str, int] | None]:
    """(text, finish_reason, usage) of a chat answer for `model`; anything else raises BadAnswer."""
    try:
        data = strict_json.loads(content)
    except ValueError as exc:
        raise BadAnswer(f"not strict JSON ({exc})") from None
    if not isinstance(data, dict):
        raise BadAnswer("not a JSON object")
    echoed = data.get("model")
    if echoed != model:
        raise BadAnswer(f"it names model {echoed!r:.80}, not the requested {model!r}" if "model" in data
                        else f"it does not name the model (requested {model!r})")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise BadAnswer("no choices[0]")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        raise BadAnswer("no choices[0].message")
    text = message.get("content")
    if not isinstance(text, str):
        raise BadAnswer(f"choices[0].message.content is {'null' if text is None else type(text).__name__}, "
                        "not a string")
    reason = choice.get("finish_reason")
    for problem in (finish_reason_problem(reason), usage_problem(data.get("usage"))):
        if problem is not None:
            raise BadAnswer(problem)
    usage = data.get("usage")
    kept = None if usage is None else {k: int(usage[k]) for k in USAGE_KEYS if usage.get(k) is not None}
    return text, reason, kept


def root_url(url: str) -> str:
    """``http://h:p/v1`` -> ``http://h:p``: where vLLM mounts /health and /version."""
    url = url.rstrip("/")
    return url.removesuffix("/v1")


def redact_url(url: str) -> str:
    """Drop any user:password@ so a URL can be recorded without a credential in it."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


def api_key_from_env(name: str | None) -> str | None:
    """The key from the variable the spec names, or None when it is unset.

    `api_key_env` is optional: a keyless seat (a loopback vLLM) needs no key, so an unset
    variable sends none; a seat that wants one answers 401/403, and that refusal says the
    variable is unset (`error_for`).
    """
    if not name:
        return None
    return os.environ.get(name) or None


async def _within(seconds: float, request: Awaitable[T]) -> T:
    """`request` under a whole-request deadline (TimeoutError past it), never swallowing a cancellation.

    Not `asyncio.wait_for`: on Python 3.11 it returns the answer instead of raising CancelledError when
    the answer lands in the same loop turn as a cancel, so a SIGTERM'd run's worker kept sending
    requests (and generate hung). `asyncio.timeout` re-raises the cancel.
    """
    async with asyncio.timeout(seconds):
        return await request


def _no_such_host(exc: BaseException) -> bool:
    """A DNS answer that the name does not exist (not a temporary resolver failure, which is retried)."""
    import socket

    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, socket.gaierror):
            return cause.errno in (socket.EAI_NONAME, getattr(socket, "EAI_NODATA", socket.EAI_NONAME))
        cause = cause.__cause__ or cause.__context__
    return False


SEAT_UP_HINT = "start one with `voicegate seat up --voices DIR`"
"""How a user gets a seat on this machine: said wherever a local seat is found missing."""

# A loopback seat that refuses the connection before it ever answered has no server behind it:
# retrying for the full policy (about 40 s) only delays saying so. A seat that answered once and
# then refuses went down: it gets the policy's `refused_budget_s`.
NOTHING_LISTENING_S = 2.5


def is_loopback_host(host: str | None) -> bool:
    """`localhost`, 127.0.0.0/8, ::1 (and 0.0.0.0, which connects to this machine too)."""
    import ipaddress

    if not host:
        return False
    if host.lower() == "localhost" or host.lower().endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def _describe_exc(exc: BaseException) -> str:
    if isinstance(exc, httpx.ConnectError):
        # httpx hides the errno behind "All connection attempts failed"; the cause chain keeps it.
        cause: BaseException | None = exc
        while cause is not None:
            if isinstance(cause, ConnectionRefusedError) or "refused" in str(cause).lower():
                return "connection refused"
            cause = cause.__cause__ or cause.__context__
        return f"cannot connect ({exc})"
    if isinstance(exc, httpx.TimeoutException):
        return f"timed out ({type(exc).__name__})"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class SeatClient:
    """One seat. Use as ``async with SeatClient(url) as seat:`` or call ``aclose()``."""

    def __init__(self, url: str, *, api_key: str | None = None, timeout: float = 120.0,
                 retry: RetryPolicy | None = None, max_connections: int = 64,
                 api_key_env: str | None = None,
                 on_retry: Callable[[str], None] | None = None,
                 transport: httpx.AsyncBaseTransport | None = None, quiet: bool = False):
        self.url = url.rstrip("/")
        self.root = root_url(self.url)
        self.turns: Turns | None = None     # set for a run that sends one model at a time (`seat._turns`)
        # What messages show: never a user:password@ the URL may carry.
        self.shown_url = redact_url(self.url)
        parts = urlsplit(self.url)
        # A token may ride as the user part alone (http://TOKEN@host): both parts are secret here.
        self._secrets = sorted({s for s in (parts.password, parts.username) if s}, key=len, reverse=True)
        self.retry = retry or RetryPolicy()
        self.timeout = timeout
        self._api_key_env = api_key_env
        self._on_retry = on_retry
        # Quiet (generate -q): no note while a loopback seat that never answered is refusing; within
        # NOTHING_LISTENING_S that ends in one line that says it all. Every other retry is still said.
        self._quiet = quiet
        self._rng = random.Random()
        # Set by a 429/503: no request of this client goes out before this monotonic time.
        self._pause_until = 0.0
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._key_sent = bool(api_key)
        self._http = httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(timeout, connect=min(10.0, timeout)),
            limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
            transport=transport,
            # Plain-http seats (the usual loopback/LAN case) skip loading the CA bundle (~50 ms).
            verify=not self.url.startswith("http://"),
        )
        self.requests_sent = 0
        self.retries = 0
        self.source: str | None = None   # the spec a command took the URL from, when no --seat was given
        self._answered = False  # any HTTP answer at all: a seat was listening once
        self._loopback = is_loopback_host(parts.hostname)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    # -- the one place requests are sent -----------------------------------------

    def _scrub(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    async def _once(self, method: str, url: str, json: Any) -> httpx.Response:
        """One attempt, under the whole-request deadline (httpx's own timeout is per read)."""
        try:
            return await _within(self.timeout, self._http.request(method, url, json=json))
        except httpx.InvalidURL as exc:
            raise VoicegateError(f"seat URL {self.shown_url}: {self._scrub(str(exc))}") from None

    async def _request(self, method: str, url: str, *, json: Any = None, retry_5xx: bool = True,
                       budget: RetryPolicy | None = None,
                       **error_ctx: Any) -> tuple[httpx.Response, float]:
        """Send with retries; return (response, latency of the attempt that answered)."""
        resp, latency, _ = await self._send(method, url, json=json, retry_5xx=retry_5xx, budget=budget,
                                            **error_ctx)
        return resp, latency

    async def _send(self, method: str, url: str, *, json: Any = None, retry_5xx: bool = True,
                    budget: RetryPolicy | None = None, check: Callable[[httpx.Response], T] | None = None,
                    attempt_with: Callable[[], Awaitable[httpx.Response]] | None = None,
                    **error_ctx: Any) -> tuple[httpx.Response, float, T | None]:
        """Send with retries; (response, latency of the attempt that answered, `check(response)`).

        `check` raising BadAnswer makes that attempt a fault, retried like a 5xx. `attempt_with`
        replaces the plain request of one attempt (a streamed read).
        """
        policy = budget or self.retry
        path = urlsplit(url).path
        started = time.monotonic()
        attempt = 0
        last = "no attempt made"
        retry_after: float | None = None
        bad_answers = 0
        while True:
            attempt += 1
            nothing_listening = went_down = False
            wait = self._pause_until - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            t0 = time.monotonic()
            try:
                self.requests_sent += 1
                resp = await (attempt_with() if attempt_with is not None else self._once(method, url, json))
            except _RETRY_EXC as exc:
                last = _describe_exc(exc)
                retry_after = None
                if _no_such_host(exc):
                    # A name that does not resolve will not resolve in a minute either: say so at once.
                    raise SeatUnreachable(self._scrub(
                        f"seat {self.shown_url} unreachable: its host name does not resolve ({last}); "
                        f"check the seat URL, or for a seat on this machine {SEAT_UP_HINT}")) from None
                nothing_listening = self._loopback and not self._answered and last == "connection refused"
                went_down = self._answered and last == "connection refused"
            except TimeoutError:
                last = f"timed out (no whole answer within {self.timeout:g}s)"
                retry_after = None
            else:
                self._answered = True
                latency = time.monotonic() - t0
                status = resp.status_code
                if status < 400:
                    try:
                        return resp, latency, (None if check is None else check(resp))
                    except BadAnswer as exc:
                        bad_answers += 1
                        last = f"bad answer: {exc}"
                        retry_after = None
                else:
                    last, retry_after = self._refusal(resp, method, path, retry_5xx, error_ctx)
            elapsed = time.monotonic() - started
            delay = policy.delay(attempt, self._rng)
            if retry_after is not None:
                delay = max(delay, retry_after)
            out_of_tries = attempt >= policy.attempts or elapsed + delay > policy.budget_s
            if nothing_listening and (out_of_tries or elapsed + delay > NOTHING_LISTENING_S):
                raise SeatUnreachable(self._scrub(
                    f"seat {self.shown_url} unreachable: nothing listens there ({method} {path}: connection "
                    f"refused, {attempt} attempts over {elapsed:.1f}s); is the seat up? {SEAT_UP_HINT}"))
            if went_down and (out_of_tries or elapsed + delay > policy.refused_budget_s):
                raise SeatUnreachable(self._scrub(
                    f"seat {self.shown_url} went down: it answered earlier in this run, now nothing listens there "
                    f"({method} {path}: connection refused, {attempt} attempts over {elapsed:.1f}s)"))
            if out_of_tries:
                what = "gave no usable answer" if bad_answers == attempt else "unreachable"
                raise SeatUnreachable(self._scrub(f"seat {self.shown_url} {what}: {method} {path}: {last} "
                                                  f"({attempt} attempts over {elapsed:.1f}s)"))
            if retry_after is not None or last.startswith(("429", "503")):
                # The seat is full: hold back every request of this client, not only this one.
                self._pause_until = max(self._pause_until, time.monotonic() + delay)
            self.retries += 1
            if self._on_retry is not None and not (self._quiet and nothing_listening):
                self._on_retry(self._scrub(f"{method} {path}: {last}; retry {attempt} in {delay:.1f}s"))
            await asyncio.sleep(delay)

    def _refusal(self, resp: httpx.Response, method: str, path: str, retry_5xx: bool,
                 error_ctx: dict[str, Any]) -> tuple[str, float | None]:
        """An error status: raise what retrying cannot change; else (what went wrong, Retry-After)."""
        status = resp.status_code
        retryable = status in (429, 503) or (status >= 500 and (retry_5xx or status in (502, 504)))
        if not retryable:
            raise error_for(status, resp.content, method=method, path=path,
                            api_key_env=self._api_key_env, key_sent=self._key_sent, **error_ctx)
        err = error_for(status, resp.content, method=method, path=path, **error_ctx)
        last = f"{status}: {err.seat_message or 'no message'}"
        return last, (_retry_after(resp) if status in (429, 503) else None)

    # -- endpoints ---------------------------------------------------------------------

    async def models(self) -> list[ModelCard]:
        resp, _ = await self._request("GET", f"{self.url}/models")
        data = _json(resp, "GET /v1/models")
        items = data.get("data") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise SeatError(f"the seat's /v1/models answer has no 'data' list: is {self.shown_url} an "
                            "OpenAI-compatible "
                            "API?")
        cards = []
        for m in items:
            if not isinstance(m, dict) or "id" not in m:
                continue
            if not isinstance(m["id"], str) or not all(isinstance(m.get(k), (str, type(None)))
                                                       for k in ("root", "parent")):
                raise SeatError("the seat's /v1/models answer lists a model whose id, root or parent is not a string")
            cards.append(ModelCard(m["id"], m.get("root"), m.get("parent")))
        return cards

    async def version(self) -> str | None:
        """vLLM's version from ``<root>/version``; None when the server does not have the route."""
        try:
            resp, _ = await self._request("GET", f"{self.root}/version")
        except SeatError as exc:
            if exc.status == 404:
                return None
            raise
        try:
            data = strict_json.loads(resp.content)
        except ValueError:
            return resp.text.strip() or None
        version = data.get("version") if isinstance(data, dict) else None
        return str(version) if isinstance(version, (str, int, float)) and not isinstance(version, bool) else None

    async def health(self) -> bool:
        """One try, no retries: is the server up and answering 200 on ``<root>/health``?"""
        try:
            resp = await _within(self.timeout, self._http.get(f"{self.root}/health"))
        except (httpx.HTTPError, httpx.InvalidURL, TimeoutError):
            return False
        return resp.status_code == 200

    async def chat(self, model: str, prompt: str, *, seed: int | None, sampling: Any) -> Completion:
        params = sampling.as_dict() if hasattr(sampling, "as_dict") else dict(sampling)
        body: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": prompt}], **params}
        if seed is not None:
            body["seed"] = seed
        send = self._send("POST", f"{self.url}/chat/completions", json=body, model=model,
                          check=lambda resp: parse_chat_answer(resp.content, model))
        if self.turns is None:
            _, latency, answer = await send
        else:      # a run that sends one model at a time: the seat's turn for this model, across runs
            async with self.turns.hold(model):
                _, latency, answer = await send
        text, finish_reason, usage = cast(tuple[str, "str | None", "dict[str, int] | None"], answer)
        return Completion(text=text, finish_reason=finish_reason, usage=usage, latency_s=latency)

    async def chat_stream(self, model: str, prompt: str, *, seed: int | None, sampling: Any) -> StreamedCompletion:
        """One chat request streamed (``stream: true``, usage in the last chunk), each line timed as it comes.

        Retried under the same policy as `chat`; the times are those of the attempt that answered.
        """
        params = sampling.as_dict() if hasattr(sampling, "as_dict") else dict(sampling)
        body: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": prompt}], **params,
                                "stream": True, "stream_options": {"include_usage": True}}
        if seed is not None:
            body["seed"] = seed
        url = f"{self.url}/chat/completions"
        lines: list[tuple[float, str]] = []
        span = [0.0, 0.0]   # when the attempt went out, when its last byte came

        async def read() -> httpx.Response:
            lines.clear()
            span[0] = time.monotonic()
            async with self._http.stream("POST", url, json=body) as resp:
                if resp.status_code >= 400:
                    await resp.aread()
                    return resp
                async for line in resp.aiter_lines():
                    lines.append((time.monotonic() - span[0], line))
                span[1] = time.monotonic()
            return resp

        async def attempt() -> httpx.Response:
            try:
                return await _within(self.timeout, read())
            except httpx.InvalidURL as exc:
                raise VoicegateError(f"seat URL {self.shown_url}: {self._scrub(str(exc))}") from None

        def check(resp: httpx.Response) -> StreamedCompletion:
            if "text/event-stream" not in resp.headers.get("content-type", ""):
                raise BadAnswer(f"asked to stream, the seat answered {resp.headers.get('content-type') or 'no type'}, "
                                "not text/event-stream")
            return parse_chat_stream(list(lines), model, span[1] - span[0])

        _, _, answer = await self._send("POST", url, json=body, model=model, check=check, attempt_with=attempt)
        return cast(StreamedCompletion, answer)

    async def load_adapter(self, name: str, path: str) -> float:
        """Load at run time; returns seconds taken. Such an adapter is gone after a seat restart."""
        # A 500 from the load route is a bad adapter (rank, config), not a fault: do not retry it.
        _, latency = await self._request("POST", f"{self.url}/load_lora_adapter",
                                         json={"lora_name": name, "lora_path": path}, retry_5xx=False,
                                         adapter=name, adapter_path=path)
        return latency

    async def unload_adapter(self, name: str, *, retry: RetryPolicy | None = None) -> float:
        _, latency = await self._request("POST", f"{self.url}/unload_lora_adapter",
                                         json={"lora_name": name}, retry_5xx=False, budget=retry, adapter=name)
        return latency


def _retry_after(resp: httpx.Response) -> float | None:
    value = resp.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, min(float(value), 300.0))
    except ValueError:
        return None


def _json(resp: httpx.Response, where: str) -> Any:
    try:
        return strict_json.loads(resp.content)
    except ValueError:
        raise SeatError(f"the seat answered {where} with something that is not JSON") from None


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run one coroutine to completion from synchronous code (the CLI, a test)."""
    return asyncio.run(coro)
