"""The typer application and the one place errors become exit codes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from voicegate._errors import VoicegateError
from voicegate._threads import single_threaded_blas
from voicegate._version import __version__

# `-h` as well as `--help`, on every command: click's settings pass from a group to its commands.
HELP = {"help_option_names": ["-h", "--help"]}

app = typer.Typer(
    name="voicegate",
    help="Pre-registered ship gates for author-voice LoRA adapters.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    # Plain click help: rich's help formatter costs ~0.1-0.2 s of imports on every `--help`.
    rich_markup_mode=None,
    context_settings=HELP,
)
seat_app = typer.Typer(help="Seat operations: up, models, check, simulate, drift, try/drop, cost, retire.",
                       no_args_is_help=True, rich_markup_mode=None, context_settings=HELP)
app.add_typer(seat_app, name="seat")

Workspace = Annotated[
    Path | None,
    typer.Option("--workspace", "-C", metavar="DIR",
                 help="Workspace root (default: $VOICEGATE_WORKSPACE or the current directory)."),
]


def gate_arg(value: str | None) -> str | None:
    """A gate named by its spec's path, as tab completion gives it: `preregistrations/lv-x.yaml` is lv-x.

    Any other path (another folder, a .yml, the record beside it) is answered with the name to give: a
    path elsewhere may be another workspace's spec, which this one must not silently stand in for.
    """
    if value is None or not value.endswith((".yaml", ".yml", ".json")):
        return value  # a name, or a path to no spec: the gate-name check says what is wrong with it
    path = Path(value)
    stem = path.name
    for suffix in (".registration.json", ".yaml", ".yml", ".json"):
        stem = stem.removesuffix(suffix)
    if path.suffix == ".yaml" and path.parts[-2:-1] == ("preregistrations",) and len(path.parts) == 2:
        return stem
    raise VoicegateError(f"{value!r} names a file: give the gate name, {stem} (voicegate reads its spec from "
                         f"preregistrations/{stem}.yaml in the workspace, -C DIR)")


Gate = Annotated[str, typer.Argument(metavar="GATE", help="The adapter's gate name, e.g. lv-bronte.",
                                     callback=gate_arg)]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"voicegate {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                               help="Print voicegate's version and exit.")] = False) -> None:
    """voicegate: freeze a gate spec, drive the seat, score, and append verdicts."""


def fail(message: str) -> None:
    """Print one line on stderr in the house style."""
    sys.stderr.write(f"voicegate: {message}\n")


def _click_exceptions() -> tuple[type[BaseException], type[BaseException], type[BaseException]]:
    """(Exit, ClickException, Abort) from whichever click typer runs on (recent typer vendors it)."""
    try:
        from typer import exceptions as typer_exc
        from typer._click import exceptions as vendored
    except ImportError:  # typer that uses the click distribution
        from click import exceptions as click_exc

        return click_exc.Exit, click_exc.ClickException, click_exc.Abort
    return typer_exc.Exit, vendored.ClickException, typer_exc.Abort


def _click_message(exc: BaseException) -> str:
    """A ClickException's one-line message (click's and typer's vendored copy both have format_message)."""
    format_message = getattr(exc, "format_message", None)
    text = format_message() if callable(format_message) else str(exc)
    return str(text).replace("\n", " ")


def _command() -> Any:
    """The click command typer builds from `app`, in the help pages' house style."""
    import typer.main

    from voicegate.cli._help import house_style

    return _in_order(house_style(typer.main.get_command(app)))


# The help lists commands in the order a gate uses them, not in the order their modules load.
WORKFLOW = ("init", "register", "generate", "import", "score", "calibrate", "ship", "note", "amend", "verify", "report",
            "seat", "demo")
SEAT_ORDER = ("up", "models", "check", "simulate", "drift", "try", "drop", "cost", "retire")


def _in_order(command: Any) -> Any:
    def ordered(group: Any, order: tuple[str, ...]) -> None:
        commands = getattr(group, "commands", None)
        if isinstance(commands, dict):
            rank = {name: i for i, name in enumerate(order)}
            group.commands = dict(sorted(commands.items(), key=lambda kv: rank.get(kv[0], len(order))))

    ordered(command, WORKFLOW)
    seat = getattr(command, "commands", {}).get("seat")
    if seat is not None:
        ordered(seat, SEAT_ORDER)
    return command


INTERRUPTED = 130  # what typer returns for Ctrl-C; the shell's convention (128 + SIGINT)
# A crash under --json exits as a refusal does: 1 would read as a gate that failed, and no document says otherwise.
CRASHED = 2


def main(argv: list[str] | None = None) -> None:
    single_threaded_blas()  # before anything imports numpy
    from voicegate.cli import _coerce, _machine

    _machine.reset()  # per invocation: the tests run many in one process
    args = list(sys.argv[1:] if argv is None else argv)
    _coerce.install()  # plain str / Path options without importing pydantic (recent typer)
    # Importing the command modules registers them; they import heavy libraries lazily.
    from voicegate import cli as _commands  # noqa: F401

    try:
        _run(args, argv)
    except SystemExit:
        _machine.finish()  # the one --json document, result or error, whichever way the command ended
        raise
    except Exception as exc:
        _machine.reset()  # a crash: no result goes out beside it
        if not _machine.json_requested(args):
            raise  # the traceback is what a bug report needs
        # Under --json a CI job parses stdout: one error document, and one line on stderr, never a traceback.
        said = str(exc).splitlines()[0] if str(exc) else ""
        message = (f"internal error: {type(exc).__name__}{': ' + said if said else ''} (a bug in voicegate; "
                   "run the command without --json for the traceback)")
        fail(message)
        _machine.error_document(message, CRASHED, args)
        _machine.finish()
        sys.exit(CRASHED)
    except BaseException:
        _machine.reset()  # interrupted outside the command (a signal): no result goes out beside it
        raise
    _machine.finish()


def _run(args: list[str], argv: list[str] | None) -> None:
    from voicegate.cli import _machine

    exit_types, click_exception, abort = _click_exceptions()

    def refuse(message: str, code: int) -> None:
        """One line on stderr; under --json also the error document on stdout (see _machine)."""
        fail(message)
        _machine.error_document(message, code, args)
        sys.exit(code)

    try:
        code = _command()(args=argv, prog_name="voicegate", standalone_mode=False)
    except VoicegateError as exc:
        refuse(str(exc).splitlines()[0] if str(exc) else type(exc).__name__, exc.exit_code)
    except exit_types as exc:
        sys.exit(getattr(exc, "exit_code", 0))
    except click_exception as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # bare `voicegate` or `voicegate seat`: the help, as --help
            sys.stdout.write(str(getattr(exc, "message", "")).rstrip("\n") + "\n")
            sys.exit(0)
        message = _click_message(exc)
        if message.startswith("No such command 'version'"):   # click would suggest `verify`
            message = "no command 'version': `voicegate --version` prints the version"
        if message.strip():  # bare `voicegate` raises with no message once the help is shown
            refuse(message, getattr(exc, "exit_code", 2))
        sys.exit(getattr(exc, "exit_code", 2))
    except OSError as exc:
        # a filesystem refusal (permissions, a full disk, a missing directory) is the user's to fix
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        refuse(f"{where}{exc.strerror or exc}", 2)
    except (abort, KeyboardInterrupt):
        code = INTERRUPTED
    if code == INTERRUPTED:
        fail("interrupted; whatever finished is kept (generate resumes where it stopped)")
    sys.exit(code if isinstance(code, int) else 0)
