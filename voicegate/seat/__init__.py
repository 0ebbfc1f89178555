"""Talking to a vLLM seat: the async client, its errors, and an in-process stand-in seat."""

from voicegate._errors import SeatUnreachable
from voicegate.seat._adapters import AdapterTrack, RuntimeAdapters, tracked
from voicegate.seat._carrier import check_carrier, parse_bytes, render_carrier
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
from voicegate.seat._commands import (
    DEFAULT_KEY_ENV,
    SEAT_URL_ENV,
    check_adapter_name,
    check_timeout,
    command_client,
    cost_arms,
    lora_rank,
    seat_urls,
    up_plan,
    workspace_seat,
)
from voicegate.seat._cost import DEFAULT_PROMPT, measure, render_cost
from voicegate.seat._drift import compare
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
from voicegate.seat._identity import SeatState, check_identical
from voicegate.seat._lora_modules import compose_line_hint, read_compose
from voicegate.seat._retire import audit, render_audit
from voicegate.seat._standin import Generator, StandinSeat, default_text
from voicegate.seat._vllm import (
    AUSTEN,
    BASE_NAME,
    PARROT,
    check_voices_dir,
    port_free,
    start_vllm,
    vllm_python,
    why_no_vllm,
)

__all__ = [
    "AUSTEN",
    "BASE_NAME",
    "DEFAULT_KEY_ENV",
    "DEFAULT_PROMPT",
    "PARROT",
    "SEAT_URL_ENV",
    "AdapterAlreadyLoaded",
    "AdapterNotFound",
    "AdapterNotLoaded",
    "AdapterTrack",
    "Completion",
    "Generator",
    "ModelCard",
    "ModelNotFound",
    "RetryPolicy",
    "RuntimeAdapters",
    "RuntimeLoraDisabled",
    "SeatAuthError",
    "SeatClient",
    "SeatError",
    "SeatState",
    "SeatUnreachable",
    "StandinSeat",
    "StreamedCompletion",
    "api_key_from_env",
    "audit",
    "check_adapter_name",
    "check_carrier",
    "check_identical",
    "check_timeout",
    "check_voices_dir",
    "command_client",
    "compare",
    "compose_line_hint",
    "cost_arms",
    "default_text",
    "lora_rank",
    "measure",
    "parse_bytes",
    "parse_error_body",
    "port_free",
    "read_compose",
    "redact_url",
    "render_audit",
    "render_carrier",
    "render_cost",
    "root_url",
    "run",
    "seat_urls",
    "start_vllm",
    "tracked",
    "up_plan",
    "vllm_python",
    "why_no_vllm",
    "workspace_seat",
]
