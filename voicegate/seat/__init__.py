"""Talking to a vLLM seat: the async client, its errors, and an in-process stand-in seat."""

from voicegate._errors import SeatUnreachable
from voicegate.seat._client import (
    Completion,
    ModelCard,
    RetryPolicy,
    SeatClient,
    StreamedCompletion,
    api_key_from_env,
    redact_url,
    root_url,
    run,
)
from voicegate.seat._errors import (
    AdapterAlreadyLoaded,
    AdapterNotFound,
    AdapterNotLoaded,
    ModelNotFound,
    RuntimeLoraDisabled,
    SeatAuthError,
    SeatError,
    parse_error_body,
)
from voicegate.seat._standin import StandinSeat, default_text

__all__ = [
    "AdapterAlreadyLoaded",
    "AdapterNotFound",
    "AdapterNotLoaded",
    "Completion",
    "ModelCard",
    "ModelNotFound",
    "RetryPolicy",
    "RuntimeLoraDisabled",
    "SeatAuthError",
    "SeatClient",
    "SeatError",
    "SeatUnreachable",
    "StandinSeat",
    "StreamedCompletion",
    "api_key_from_env",
    "default_text",
    "parse_error_body",
    "redact_url",
    "root_url",
    "run",
]
