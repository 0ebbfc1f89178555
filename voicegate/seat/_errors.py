"""What a seat can say no with, as one-line messages a user can act on.

vLLM answers errors as ``{"error": {"message", "type", "param", "code"}}``; its
LoRA endpoints answer ``{"detail": "Not Found"}`` (404) when runtime updating is
off, because the routes are not mounted at all. ``describe`` turns either into
a sentence that names what to change.
"""

from __future__ import annotations

import json
import re
from typing import Any, TypedDict

from voicegate._errors import SeatUnreachable, VoicegateError

__all__ = [
    "AdapterAlreadyLoaded", "AdapterNotFound", "AdapterNotLoaded", "ModelNotFound", "RuntimeLoraDisabled",
    "SeatAuthError", "SeatError", "SeatUnreachable", "error_for", "parse_error_body",
]


class SeatError(VoicegateError):
    """The seat answered, and the answer was a refusal that retrying will not change (exit 2)."""

    def __init__(self, message: str, *, status: int | None = None, type_: str | None = None,
                 seat_message: str | None = None):
        super().__init__(message)
        self.status = status
        self.type = type_
        self.seat_message = seat_message


class ModelNotFound(SeatError):
    """404 on a chat request: the seat does not serve that model (name), e.g. after a restart."""


class AdapterAlreadyLoaded(SeatError):
    """400 on load: an adapter of that name is already loaded."""


class AdapterNotFound(SeatError):
    """404 on load: nothing the seat recognises as an adapter at that path."""


class AdapterNotLoaded(SeatError):
    """404 on unload: no adapter of that name is loaded."""


class RuntimeLoraDisabled(SeatError):
    """404 {"detail": "Not Found"} on a LoRA endpoint: runtime updating is off on the seat."""


class SeatAuthError(SeatError):
    """401/403: the seat (or a proxy in front of it) refused the key."""


class _Answer(TypedDict):
    """What every refusal carries besides its message (the keyword arguments of ``SeatError``)."""

    status: int
    type_: str | None
    seat_message: str | None


def _one_line(text: str, limit: int = 300) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def parse_error_body(body: bytes | str) -> tuple[str | None, str | None]:
    """(type, message) from a vLLM/OpenAI error body, FastAPI's {"detail": ...}, or plain text."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", errors="replace")
    try:
        data: Any = json.loads(body)
    except (ValueError, RecursionError):
        return None, _one_line(body) or None
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict):
            return (str(err["type"]) if err.get("type") is not None else None,
                    _one_line(str(err.get("message", ""))) or None)
        if isinstance(err, str):
            return None, _one_line(err)
        if "detail" in data:
            detail = data["detail"]
            return "detail", _one_line(detail if isinstance(detail, str) else json.dumps(detail))
        if "message" in data:
            return None, _one_line(str(data["message"]))
    return None, _one_line(body) or None


def error_for(status: int, body: bytes | str, *, method: str, path: str, model: str | None = None,
              adapter: str | None = None, adapter_path: str | None = None,
              api_key_env: str | None = None, key_sent: bool = True) -> SeatError:
    """The refusal for a non-retryable answer, with a message that says what to do."""
    type_, msg = parse_error_body(body)
    kw: _Answer = {"status": status, "type_": type_, "seat_message": msg}
    lora = path.endswith(("/load_lora_adapter", "/unload_lora_adapter"))
    where = f"{method} {path}"
    if lora and status == 404 and type_ == "detail":
        return RuntimeLoraDisabled(
            f"the seat does not allow runtime adapter loading ({where} answered 404 Not Found): start vLLM "
            "with VLLM_ALLOW_RUNTIME_LORA_UPDATING=1, or list the adapter in --lora-modules", **kw)
    if status in (401, 403):
        if api_key_env and not key_sent:
            hint = f"; ${api_key_env} is not set in the environment: set it to the seat's key"
        elif api_key_env:
            hint = f"; check the key in ${api_key_env}"
        else:
            hint = "; set seat.api_key_env in the spec and the key in that environment variable"
        return SeatAuthError(f"the seat refused the request ({status} on {where}: {msg or 'no reason given'})"
                             f"{hint}", **kw)
    if path.endswith("/load_lora_adapter"):
        if status == 400 and msg and "already been loaded" in msg:
            return AdapterAlreadyLoaded(f"adapter {adapter!r} is already loaded on the seat", **kw)
        if status == 404:
            return AdapterNotFound(
                f"the seat found no adapter for {adapter!r} at {adapter_path} (the path is read on the "
                f"seat's side, e.g. inside its container): {msg}", **kw)
        return SeatError(f"the seat could not load adapter {adapter!r} from {adapter_path} ({status}): {msg}", **kw)
    if path.endswith("/unload_lora_adapter") and status == 404:
        return AdapterNotLoaded(f"adapter {adapter!r} is not loaded on the seat", **kw)
    if status == 404 and model is not None and (type_ == "NotFoundError" or (msg and "does not exist" in msg)):
        return ModelNotFound(f"the seat does not serve model {model!r}: {msg}", **kw)
    if status == 400 and msg and "max_model_len" in msg.replace("-", "_"):
        return SeatError(f"the seat rejected the request as too long for its --max-model-len: {msg}", **kw)
    return SeatError(f"the seat answered {status} to {where}: {(type_ + ': ') if type_ and type_ != 'detail' else ''}"
                     f"{msg or 'no message'}", **kw)
