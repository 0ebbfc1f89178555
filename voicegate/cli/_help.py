"""The help pages' house style: `GATE` as the docs write it, a metavar on every option that takes a value.

typer's plain help tags every argument with its Python type (`GATE <str>`), braces a
required argument in the usage line (`{GATE}`) and names an option's value by its type
(`--reason <str>`). The docs and the error messages say `GATE`, so the help does too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from typer.core import TyperArgument, TyperOption

# What an option's value is called when the option does not name it itself.
_VALUE_NAMES: dict[Any, str] = {str: "TEXT", int: "N", float: "NUMBER", Path: "PATH"}


class _Argument(TyperArgument):
    def display_type_rich(self, ctx: Any) -> str | None:
        return None  # the metavar says what it is; a `<str>` tag adds nothing

    def _usage_display_name(self) -> str:
        name = self.display_name_raw
        if not self.required:
            name = f"[{name}]"
        return name + ("..." if self.nargs != 1 else "")


def house_style(command: Any) -> Any:
    """Restyle every argument and option of `command` and its subcommands, in place; returns it."""
    for sub in getattr(command, "commands", {}).values():
        house_style(sub)
    for param in command.params:
        if type(param) is TyperArgument:
            param.__class__ = _Argument
        elif isinstance(param, TyperOption) and param.metavar is None and not (param.is_flag or param.count):
            annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
            param.metavar = _VALUE_NAMES.get(annotation, param.name.upper() if param.name else "VALUE")
    return command
