"""What the seat commands decide before and after they talk to the seat, and the one seat-URL resolver.

`cli/_seat.py` parses options and prints; the logic is here: which seat a command reaches
(`seat_urls`, shared with `generate`: every `--seat`, else `$VOICEGATE_SEAT_URL`, else what the
spec or the workspace's specs name), which key it sends (`command_client`), the refusals on
bad input (`check_timeout`, `check_adapter_name`), which base and voice `seat cost` measures
(`cost_arms`) and what `seat up` serves (`up_plan`, `lora_rank`).

`seat` imports nothing above `run`: the workspace's specs are read here as plain YAML
(`workspace_seat`), never through `voicegate.spec`.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from voicegate._errors import VoicegateError
from voicegate._seat_url import check_seat_url
from voicegate.seat._client import ModelCard, RetryPolicy, SeatClient, is_loopback_host, redact_url

SEAT_URL_ENV = "VOICEGATE_SEAT_URL"
DEFAULT_KEY_ENV = "VOICES_API_KEY"
NO_SEAT = "no seat given: pass --seat URL or set VOICEGATE_SEAT_URL"


def seat_urls(explicit: Sequence[str], named: Callable[[], Iterable[tuple[str, str]]], *,
              environ: Mapping[str, str] | None = None) -> list[str]:
    """The seat (or its replicas) a command reaches: every `--seat` given, else `$VOICEGATE_SEAT_URL`, else
    `named()`'s (url, where the url comes from) pairs, asked only then. Each URL is checked, naming where it
    came from; a `--seat` given twice is refused."""
    env = os.environ if environ is None else environ
    if explicit:
        urls = [check_seat_url(u, "--seat") for u in explicit]
        twice = sorted({redact_url(u) for u in urls if urls.count(u) > 1})
        if twice:
            raise VoicegateError(f"--seat: {', '.join(twice)} is given twice; each replica once")
        return urls
    if env.get(SEAT_URL_ENV):
        return [check_seat_url(env[SEAT_URL_ENV], f"${SEAT_URL_ENV}")]
    return [check_seat_url(url, where) for url, where in named()]


def workspace_seat(root: Path) -> tuple[str, str | None, str]:
    """(seat.url, seat.api_key_env, where) the workspace's specs name, when they all agree on one seat.

    Read leniently, as plain YAML: a spec that does not read names no seat (`register` says why).
    """
    import yaml

    from voicegate._yaml import load_strict

    seats: dict[tuple[str, str | None], list[str]] = {}
    for path in sorted((root / "preregistrations").glob("*.yaml")):
        try:
            raw = load_strict(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            raw = None  # a spec that does not read names no seat; `register` says why
        seat = raw.get("seat") if isinstance(raw, dict) else None
        if isinstance(seat, dict) and isinstance(seat.get("url"), str) and seat["url"].strip():
            env = seat.get("api_key_env") if isinstance(seat.get("api_key_env"), str) else None
            seats.setdefault((seat["url"].strip().rstrip("/"), env), []).append(path.stem)
    if not seats:
        raise VoicegateError(NO_SEAT)
    if len(seats) > 1:
        named = "; ".join(f"{', '.join(gates)}: {url}" for (url, _), gates in seats.items())
        raise VoicegateError(f"{NO_SEAT} (the specs here name {len(seats)} seats — {named})")
    (url, env), gates = next(iter(seats.items()))
    # The command says it used this spec's URL (`client.source`): a URL no one typed is named with its origin.
    return url, env, f"preregistrations/{gates[0]}.yaml: seat.url"


def check_timeout(timeout: float, option: str = "--timeout") -> float:
    """A timeout is a finite number of seconds > 0: 0 would time every request out (exit 2, not 3)."""
    if not (math.isfinite(timeout) and timeout > 0):
        raise VoicegateError(f"{option} must be a number of seconds > 0, got {timeout:g}")
    return timeout


def check_adapter_name(name: str) -> None:
    if not name or any(ch.isspace() for ch in name) or "/" in name:
        raise VoicegateError(f"not an adapter name: {name!r}")


def command_client(seat: str | None, key_env: str | None, timeout: float, *, root: Callable[[], Path],
                   patient: bool = False, environ: Mapping[str, str] | None = None) -> SeatClient:
    """A SeatClient for a seat command; few quick retries, since an operator is waiting at the prompt.

    `seat` is `--seat` (typer fills it from `$VOICEGATE_SEAT_URL` too); without it, the seat the
    workspace's specs name (`root()` finds the workspace), and their `seat.api_key_env`.
    """
    env = os.environ if environ is None else environ
    check_timeout(timeout)
    spec_key_env: list[str | None] = [None]
    source: list[str | None] = [None]

    def named() -> list[tuple[str, str]]:
        url, spec_key_env[0], where = workspace_seat(root())
        source[0] = where.removesuffix(": seat.url")
        return [(url, where)]

    url = seat_urls([seat] if seat else [], named, environ={})[0]
    name = key_env or spec_key_env[0] or DEFAULT_KEY_ENV
    key = env.get(name) or None
    if key_env and key is None:
        raise VoicegateError(f"--api-key-env names ${key_env}, which is not set in the environment")
    retry = RetryPolicy(attempts=6, base_s=0.5, budget_s=60.0) if patient else \
        RetryPolicy(attempts=3, base_s=0.25, max_delay_s=2.0, budget_s=10.0)
    client = SeatClient(url, api_key=key, api_key_env=name, timeout=timeout, retry=retry)
    client.source = source[0]
    return client


def cost_arms(cards: Sequence[ModelCard], base: str | None, voice: str) -> str:
    """The base `seat cost` measures `voice` against (the seat's one base unless `--base` names one)."""
    ids = {c.id: c for c in cards}
    bases = [c.id for c in cards if c.parent is None]
    if base is None:
        if len(bases) != 1:
            raise VoicegateError(f"the seat serves {len(bases)} base models ({', '.join(bases) or 'none'}): "
                                 "name one with --base")
        base = bases[0]
    elif base not in ids:
        raise VoicegateError(f"the seat does not serve base {base!r}")
    if voice not in ids:
        raise VoicegateError(f"the seat does not serve {voice!r}: load it first (`voicegate seat try`)")
    if ids[voice].parent is None:
        raise VoicegateError(f"{voice!r} is a base model on this seat, not an adapter")
    return base


# -- up ---------------------------------------------------------------------------------------

LORA_RANKS = (8, 16, 32, 64, 128, 256, 512)   # the --max-lora-rank values vLLM accepts
DEFAULT_UP_PORT = 8027


def _adapter_rank(directory: Path) -> int:
    try:
        r = json.loads((directory / "adapter_config.json").read_text(encoding="utf-8")).get("r", 16)
    except (OSError, ValueError, AttributeError):
        raise VoicegateError(f"{directory}/adapter_config.json: not a readable PEFT adapter config") from None
    return int(r) if isinstance(r, int) and not isinstance(r, bool) and r > 0 else 16


def lora_rank(adapters: Iterable[Path]) -> int:
    """The --max-lora-rank that serves every adapter: the smallest vLLM accepts at or above their largest r."""
    rank = max([_adapter_rank(p) for p in adapters] or [16])
    return next((r for r in LORA_RANKS if r >= rank), rank)


def up_plan(voices: Path, extra: list[str]) -> tuple[Path, dict[str, Path]]:
    """The carrier and the adapters to serve: a tiny-voices folder (carrier/ + voice folders) or a carrier."""
    if not voices.is_dir():
        raise VoicegateError(f"--voices {voices}: no such folder (give a tiny-voices folder, e.g. "
                             "../shared/fixtures/tiny-voices, or a carrier folder with config.json)")
    adapters: dict[str, Path] = {}
    if (voices / "carrier" / "config.json").is_file():
        carrier = voices / "carrier"
        for sub in sorted(voices.iterdir()):
            if sub.is_dir() and (sub / "adapter_config.json").is_file():
                adapters[sub.name] = sub
    elif (voices / "config.json").is_file():
        carrier = voices
    else:
        raise VoicegateError(f"--voices {voices}: neither carrier/config.json nor config.json is there (give a "
                             "tiny-voices folder or a carrier folder of your own)")
    for item in extra:
        name, sep, where = item.partition("=")
        check_adapter_name(name)
        path = Path(where)
        if not sep or not (path / "adapter_config.json").is_file():
            raise VoicegateError(f"--adapter {item}: give NAME=DIR, DIR a PEFT adapter folder (adapter_config.json)")
        adapters[name] = path
    if voices.resolve() == carrier.resolve() and (voices / "adapter_config.json").is_file():
        raise VoicegateError(f"--voices {voices} is an adapter folder, not a carrier")
    return carrier, adapters


# What `seat up` sets on vLLM's command line itself, and what to use instead. A flag after `--` is
# passed through as given (last on the line, so it wins over the recipe's --max-loras, --max-num-seqs,
# --max-model-len, ...); these would serve something other than what `seat up` reports and checks.
OWNED_VLLM_FLAGS: dict[str, str] = {
    "--model": "the carrier comes from --voices",
    "--served-model-name": "the carrier is served as voices-base, as every spec of this seat names it",
    "--tokenizer": "the carrier's own tokenizer is served with it (--voices)",
    "--host": "seat up serves on 127.0.0.1",
    "--port": "give it as `voicegate seat up --port N` (or in $VOICEGATE_SEAT_URL)",
    "--uds": "seat up serves on 127.0.0.1 (--port N)",
    "--enable-lora": "seat up always serves LoRA adapters",
    "--no-enable-lora": "seat up always serves LoRA adapters",
    "--lora-modules": "the adapters come from --voices and --adapter NAME=DIR",
    "--api-key": "seat up serves a keyless seat on 127.0.0.1, and says so",
}


def check_vllm_args(args: Sequence[str]) -> list[str]:
    """The flags given after `seat up ... --`, refused when voicegate sets that flag itself.

    vLLM reads `--max_num_seqs` as `--max-num-seqs` and `--flag=value` as `--flag value`, so both are
    compared in that form. The first item must be a flag: a stray word is not passed to vLLM as a model.
    """
    items = list(args)
    if items and not items[0].startswith("-"):
        raise VoicegateError(f"after `--` come vLLM flags (e.g. -- --max-num-seqs 4), got {items[0]!r}: the "
                             "carrier is --voices DIR")
    for item in items:
        if not item.startswith("--"):
            continue
        flag = item.split("=", 1)[0].replace("_", "-")
        if flag in OWNED_VLLM_FLAGS:
            raise VoicegateError(f"-- {item}: voicegate sets {flag} itself ({OWNED_VLLM_FLAGS[flag]}); pass "
                                 "only other vLLM flags after --")
    return items


def up_port(port: int | None, environ: Mapping[str, str] | None = None) -> tuple[int, str | None]:
    """The port `seat up` serves on, and a note when $VOICEGATE_SEAT_URL points elsewhere.

    `--port` first; else the port of `$VOICEGATE_SEAT_URL` when it names this machine, so one variable
    says where the seat runs and where every command finds it; else 8027.
    """
    from urllib.parse import urlsplit

    env = os.environ if environ is None else environ
    url = env.get(SEAT_URL_ENV)
    if not url:
        return (port or DEFAULT_UP_PORT), None
    checked = check_seat_url(url, f"${SEAT_URL_ENV}")
    parts = urlsplit(checked)
    here = is_loopback_host(parts.hostname)
    if port is None and here and parts.port:
        return parts.port, None
    chosen = port or DEFAULT_UP_PORT
    if here and parts.port == chosen:
        return chosen, None
    return chosen, (f"note: ${SEAT_URL_ENV} is {redact_url(checked)}: commands in this shell reach that, not "
                    f"this seat on port {chosen}")


def default_log_path(port: int, environ: Mapping[str, str] | None = None) -> Path:
    """Where `seat up` keeps vLLM's log: the user's cache (beside the vLLM venv), one file per port."""
    env = os.environ if environ is None else environ
    cache = Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "voicegate" / f"seat-{port}.log"


def check_log_file(path: Path) -> Path:
    """A `--log-file` that can be written: its folder exists and it is not a folder itself (exit 2 before vLLM)."""
    if path.is_dir():
        raise VoicegateError(f"--log-file {path}: is a folder; give a file path")
    if not path.parent.is_dir():
        raise VoicegateError(f"--log-file {path}: no such folder {path.parent}")
    try:
        with open(path, "ab"):
            pass
    except OSError as exc:
        raise VoicegateError(f"--log-file {path}: cannot write it ({exc.strerror or exc})") from None
    return path


def keep_previous_log(path: Path) -> None:
    """The last start's log moves to FILE.1 before this start rewrites FILE: the log of a seat that died is
    what its restart would otherwise erase."""
    try:
        if path.is_file() and path.stat().st_size > 0:
            os.replace(path, path.with_name(path.name + ".1"))
    except OSError:
        pass   # a log that cannot be moved is rewritten, as before; the seat still starts
