"""Plain flags, `str` and `Path` options coerced without pydantic (recent typer's runtime coercion).

typer >= 0.2x coerces every parameter through a pydantic ``TypeAdapter``: importing
pydantic and building the adapters costs 0.1-0.2 s of CPU on every command, more than
scoring a gate from a warm cache spends on its numbers. Most of voicegate's parameters
are a flag, a plain string or a path, where that adapter does nothing pydantic is needed
for: a flag's bool stays the bool, a string stays the string, a path becomes ``Path(value)``
and goes through typer's own path checks (``coerce_cli_path``). Those cases are coerced here; every other
parameter (numbers with bounds, lists, choices, files, custom parsers), and any value
that is not a plain string, goes to typer's own coercion, built when first needed.

Installed by `main` when typer has this layer; a typer without it (or one whose
internals moved) is left exactly as it is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

_INSTALLED = False


def install() -> bool:
    """Route plain bool / str / Path parameters around pydantic; False when this typer has no such layer."""
    global _INSTALLED
    if _INSTALLED:
        return True
    try:
        from dataclasses import dataclass, field

        from typer import core as typer_core
        from typer._coercion import RuntimeParam
        from typer._param_types import coerce_cli_path, lenient_issubclass
    except ImportError:
        return False
    original: Any = getattr(typer_core, "build_runtime_param", None)
    if original is None or not hasattr(typer_core, "_TyperParameter"):
        return False

    @dataclass(frozen=True)
    class PlainRuntimeParam(RuntimeParam):  # typer's private ABC: parameter_info, annotation, coerce()
        descriptor: Any = None
        path_type: Any = None
        _fallback: list[Any] = field(default_factory=list, compare=False, repr=False)

        def _typer(self) -> Any:
            if not self._fallback:
                self._fallback.append(original(self.descriptor))
            return self._fallback[0]

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            if self.annotation is bool:
                if isinstance(value, bool):
                    return value  # a flag's own value (a missing one, None, never gets here)
                return self._typer()._coerce_value(value, param=param, ctx=ctx)
            if not isinstance(value, str):
                return self._typer()._coerce_value(value, param=param, ctx=ctx)
            if self.path_type is None:
                return value
            return coerce_cli_path(self.path_type(value), self.parameter_info, path_type=self.path_type,
                                   param=param, ctx=ctx)

    def build_runtime_param(descriptor: Any) -> Any:
        info = descriptor.parameter_info
        annotation = descriptor.annotation
        if descriptor.file_annotation is None and getattr(info, "parser", None) is None:
            if annotation is str or annotation is bool:
                return PlainRuntimeParam(parameter_info=info, annotation=annotation, descriptor=descriptor)
            if lenient_issubclass(annotation, Path) and getattr(info, "path_type", None) is None:
                return PlainRuntimeParam(parameter_info=info, annotation=annotation, descriptor=descriptor,
                                         path_type=annotation)
        return original(descriptor)

    typer_core.build_runtime_param = build_runtime_param
    _INSTALLED = True
    return True
