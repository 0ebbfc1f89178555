"""`voicegate generate`: drive the registered generations through the seat."""

from __future__ import annotations

from typing import Annotated

import typer

from voicegate.cli._app import Gate, Workspace, app, fail
from voicegate.cli._machine import AsJson


@app.command("generate")
def generate_cmd(
    gate: Gate,
    workspace: Workspace = None,
    seat: Annotated[list[str] | None, typer.Option(
        "--seat", metavar="URL",
        help="The seat's OpenAI base URL, e.g. http://host:8027/v1; give it once per replica to spread the gate "
             "over several replicas of one seat (default: $VOICEGATE_SEAT_URL, then the spec's seat.replicas, "
             "then its seat.url).")] = None,
    concurrency: Annotated[int | None, typer.Option(
        "--concurrency", "-n", min=1,
        help="Requests in flight on each replica (default: the spec's seat.concurrency).")] = None,
    retries: Annotated[int | None, typer.Option(
        "--retries", min=1, help="Attempts per request before the seat counts as unreachable (default 8).")] = None,
    retry_budget: Annotated[float | None, typer.Option(
        "--retry-budget", min=0.0, help="Seconds one request may spend retrying (default 300, and 10 for "
                                        "'connection refused' from a seat that answered earlier in the run: it went "
                                        "down; a budget given here applies to both).")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress display (for CI).")] = False,
    isolate_arms: Annotated[bool | None, typer.Option(
        "--isolate-arms/--mix-arms",
        help="Send one arm at a time (the seat drained only at an arm switch), so arms never share the seat; "
             "on a run whose "
             "seat integrity failed, also moves the suspect rows to quarantine and regenerates them "
             "(default: the spec's generation.isolate_arms).")] = None,
    canaries: Annotated[int | None, typer.Option(
        "--canaries", min=1, help="Integrity canary checks per arm and replica (default: references and checks "
                                  "within 5% of the requests, at least 3 per arm; isolated, one more opens every "
                                  "arm switch; the base's 6 short carrier probes are outside it).")] = None,
    as_json: AsJson = False,
) -> None:
    """Generate every registered (arm, seed, prompt) not yet stored: interleaved, resumable."""
    from voicegate.generate import generate
    from voicegate.seat import RetryPolicy
    from voicegate.spec import load_spec, workspace_root

    policy = None
    if retries is not None or retry_budget is not None:
        default = RetryPolicy()
        policy = RetryPolicy(attempts=retries or default.attempts,
                             base_s=min(default.base_s, retry_budget / 4) if retry_budget else default.base_s,
                             max_delay_s=default.max_delay_s,
                             budget_s=default.budget_s if retry_budget is None else retry_budget,
                             refused_budget_s=default.refused_budget_s if retry_budget is None else retry_budget)
    spec = load_spec(workspace_root(workspace), gate)
    # --json: the progress display (stderr) is off, as under -q; messages still go to stderr.
    result = generate(spec, seat_url=seat, concurrency=concurrency, quiet=quiet or as_json, retry=policy, say=fail,
                      isolate_arms=isolate_arms, canaries=canaries)
    if as_json:
        from voicegate.cli._documents import generate_document
        from voicegate.cli._machine import emit

        emit(generate_document(result))  # before exit 4 below: the document says "failed" and stdout parses
    else:
        typer.echo(result.summary())
    from voicegate.cli._synthetic import synthetic_note

    synthetic = synthetic_note(spec.run_dir)
    if synthetic:
        (fail if as_json else typer.echo)(synthetic)
    if result.canaries.failed:
        from voicegate._errors import IntegrityFailed

        # Exit 4: every row is stored, but the seat did not prove it served each arm its own weights.
        raise IntegrityFailed(f"{gate}: seat integrity FAILED in this run (exit 4); the rows are kept but `voicegate "
                              f"score {gate}` will refuse them: run `voicegate generate {gate} --isolate-arms`")
