"""What a compose file persists: the `--lora-modules` of each service, read as vLLM reads them.

Only data is read (``yaml.safe_load``); voicegate never edits compose files. Values are
interpolated the way ``docker compose`` does (``${VAR:-default}`` and friends, shell
environment over the ``.env`` file beside the compose file), because the fleet's compose
puts every tunable behind such a default. Items are parsed with vLLM's own rule
(``LoRAParserAction``): ``name=path`` when the item has ``=`` and no ``,``, otherwise a JSON
object ``{"name", "path", "base_model_name"}``. Like vLLM's argparse action, a second
``--lora-modules`` flag *replaces* the first list — a trap worth a warning, since the
adapters of the first list silently stop surviving a restart.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from voicegate._errors import VoicegateError

LORA_FLAG = "--lora-modules"

_VAR = re.compile(
    r"\$(?:(?P<esc>\$)|\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?+])(?P<arg>(?:[^{}]|\{[^{}]*\})*))?\}"
    r"|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))"
)
_FLAG = re.compile(r"^--?[A-Za-z]")


@dataclass(frozen=True)
class LoraModule:
    """One persisted adapter: its served name and the path vLLM loads it from (in the container)."""

    name: str
    path: str
    service: str
    base_model_name: str | None = None
    host_path: str | None = None   # the same directory on the host, through the service's volumes
    item: str = ""                 # the command item exactly as interpolated


@dataclass(frozen=True)
class Service:
    """One compose service's server command, interpolated and split into argv tokens."""

    name: str
    tokens: tuple[str, ...]
    volumes: tuple[tuple[str, str], ...]   # (host source, container target)

    def flag(self, *names: str) -> list[str] | None:
        """The values of the last occurrence of any of ``names`` (argparse: last one wins)."""
        found: list[str] | None = None
        for i, tok in enumerate(self.tokens):
            head, eq, tail = tok.partition("=")
            if head in names:
                if eq:
                    found = [tail]
                    continue
                vals: list[str] = []
                for nxt in self.tokens[i + 1:]:
                    if _FLAG.match(nxt):
                        break
                    vals.append(nxt)
                found = vals
        return found

    def flag_count(self, name: str) -> int:
        return sum(1 for tok in self.tokens if tok.partition("=")[0] == name)


@dataclass
class ComposeLoras:
    """The services of a compose file that carry `--lora-modules`, and what they persist."""

    path: Path
    services: list[Service]
    modules: list[LoraModule]
    warnings: list[str] = field(default_factory=list)

    def by_name(self) -> dict[str, LoraModule]:
        return {m.name: m for m in self.modules}


def interpolate(value: str, env: Mapping[str, str]) -> str:
    """Compose-style variable substitution of one string."""

    def sub(m: re.Match[str]) -> str:
        if m.group("esc"):
            return "$"
        name = m.group("braced") or m.group("bare")
        op, arg = m.group("op"), m.group("arg")
        val = env.get(name)
        if op is None:
            return val or ""
        arg = interpolate(arg or "", env)
        unset_or_empty = not val if op.startswith(":") else val is None
        kind = op[-1]
        if kind == "-":
            return arg if unset_or_empty else (val or "")
        if kind == "?":
            if unset_or_empty:
                raise VoicegateError(f"compose variable {name} is required: {arg or 'not set'}")
            return val or ""
        # "+": the alternative when set
        return "" if unset_or_empty else arg

    return _VAR.sub(sub, value)


def _dotenv(directory: Path) -> dict[str, str]:
    env: dict[str, str] = {}
    p = directory / ".env"
    if not p.is_file():
        return env
    for line in p.read_text(encoding="utf-8", errors="replace").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        k, v = line.split("=", 1)
        v = v.strip()
        if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
            v = v[1:-1]
        env[k.strip().removeprefix("export ").strip()] = v
    return env


def compose_env(compose_path: Path, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment compose would interpolate with: the shell's over the ``.env`` file's."""
    env = _dotenv(compose_path.parent)
    env.update(os.environ if environ is None else environ)
    return env


def _argv(value: Any, env: Mapping[str, str], where: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        try:
            return shlex.split(interpolate(value, env))
        except ValueError as exc:
            raise VoicegateError(f"{where}: cannot split the command string: {exc}") from None
    if isinstance(value, list):
        out = []
        for item in value:
            if isinstance(item, (dict, list)):
                # YAML turned an unquoted JSON item into a mapping; compose would refuse it, but
                # its meaning is plain, so read it back as the JSON vLLM would have received.
                out.append(json.dumps(item))
            else:
                out.append(interpolate(str(item), env))
        return out
    raise VoicegateError(f"{where}: must be a string or a list, got {type(value).__name__}")


def _volumes(value: Any, env: Mapping[str, str], base: Path) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for vol in value or []:
        if isinstance(vol, dict):
            src, dst = vol.get("source"), vol.get("target")
            if not (isinstance(src, str) and isinstance(dst, str)):
                continue
            src, dst = interpolate(src, env), interpolate(dst, env)
        elif isinstance(vol, str):
            parts = interpolate(vol, env).split(":")
            if len(parts) < 2:
                continue   # an anonymous volume: nothing on the host to name
            src, dst = parts[0], parts[1]
        else:
            continue
        if src.startswith((".", "~")) or ("/" in src and not src.startswith("/")):
            src = str((base / os.path.expanduser(src)).resolve()) if not src.startswith("~") \
                else os.path.expanduser(src)
        out.append((src, dst))
    return out


def host_path(container_path: str, volumes: tuple[tuple[str, str], ...] | list[tuple[str, str]]) -> str | None:
    """Map a container path to the host through the longest matching bind mount."""
    p = PurePosixPath(container_path)
    best: tuple[int, str] | None = None
    for src, dst in volumes:
        d = PurePosixPath(dst)
        if p == d or d in p.parents:
            if not src.startswith("/"):
                continue   # a named volume: no host directory to point at
            rest = p.relative_to(d)
            mapped = str(PurePosixPath(src) / rest) if str(rest) != "." else src
            if best is None or len(d.parts) > best[0]:
                best = (len(d.parts), mapped)
    return best[1] if best else None


def parse_item(item: str, where: str) -> tuple[str, str, str | None]:
    """One `--lora-modules` item → (name, path, base_model_name), by vLLM's own rule."""
    if "=" in item and "," not in item:
        name, path = item.split("=", 1)
        return name, path, None
    try:
        data = json.loads(item)
    except json.JSONDecodeError:
        raise VoicegateError(f"{where}: invalid --lora-modules item {item!r} (neither name=path nor JSON)") from None
    if not isinstance(data, dict) or not isinstance(data.get("name"), str) or not isinstance(data.get("path"), str):
        raise VoicegateError(f"{where}: --lora-modules JSON item needs string 'name' and 'path': {item!r}")
    extra = set(data) - {"name", "path", "base_model_name"}
    if extra:
        raise VoicegateError(f"{where}: --lora-modules item has fields vLLM refuses: {sorted(extra)}")
    base = data.get("base_model_name")
    return data["name"], data["path"], base if isinstance(base, str) else None


def load_services(compose_path: Path, environ: Mapping[str, str] | None = None) -> list[Service]:
    """Every service of the compose file, its entrypoint+command as argv tokens."""
    from voicegate._yaml import read_yaml

    raw = read_yaml(compose_path, "compose file")
    if not isinstance(raw, dict) or not isinstance(raw.get("services"), dict):
        raise VoicegateError(f"{compose_path}: no 'services' mapping")
    env = compose_env(compose_path, environ)
    out = []
    for name, svc in raw["services"].items():
        if not isinstance(svc, dict):
            continue
        where = f"{compose_path.name}: services.{name}"
        tokens = (_argv(svc.get("entrypoint"), env, where + ".entrypoint")
                  + _argv(svc.get("command"), env, where + ".command"))
        out.append(Service(name=str(name), tokens=tuple(tokens),
                           volumes=tuple(_volumes(svc.get("volumes"), env, compose_path.parent))))
    return out


def read_compose(compose_path: Path, *, service: str | None = None,
                 environ: Mapping[str, str] | None = None) -> ComposeLoras:
    """The adapters a compose file persists, per service that runs with `--lora-modules`.

    With more than one such service the caller must name one: two seats in one file
    persist two different sets, and mixing them would hide drift.
    """
    services = load_services(compose_path, environ)
    if service is not None:
        chosen = [s for s in services if s.name == service]
        if not chosen:
            raise VoicegateError(f"{compose_path}: no service named {service!r} "
                                 f"(services: {', '.join(s.name for s in services) or 'none'})")
    else:
        chosen = [s for s in services if s.flag_count(LORA_FLAG) or s.flag("--enable-lora") is not None]
        if len(chosen) > 1:
            raise VoicegateError(f"{compose_path}: several services serve LoRA "
                                 f"({', '.join(s.name for s in chosen)}); pick one with --service")
    result = ComposeLoras(path=compose_path, services=chosen, modules=[])
    if not chosen:
        result.warnings.append(f"{compose_path.name}: no service runs with --enable-lora or --lora-modules, "
                               "so it persists no adapter")
    for svc in chosen:
        n = svc.flag_count(LORA_FLAG)
        if n > 1:
            result.warnings.append(f"service {svc.name}: --lora-modules is given {n} times; vLLM keeps only "
                                   f"the last list, so the adapters of the earlier ones do not survive a restart")
        items = svc.flag(LORA_FLAG) or []
        seen: set[str] = set()
        for item in items:
            if item in ("", None):
                continue
            name, path, base = parse_item(item, f"{compose_path.name}: services.{svc.name}")
            if name in seen:
                result.warnings.append(f"service {svc.name}: adapter {name} is listed twice; the later path wins")
                result.modules = [m for m in result.modules if not (m.name == name and m.service == svc.name)]
            seen.add(name)
            result.modules.append(LoraModule(name=name, path=path, service=svc.name, base_model_name=base,
                                             host_path=host_path(path, svc.volumes), item=item))
    return result


def lora_item(name: str, path: str) -> str:
    """The `--lora-modules` item that persists ``name`` at ``path`` (the short form when it is safe)."""
    if "," in path or "=" in name:
        return json.dumps({"name": name, "path": path})
    return f"{name}={path}"


def compose_line_hint(compose_path: Path | None, name: str, path: str) -> tuple[str, str]:
    """(where, line): the exact line an operator adds to persist ``name``, as text.

    When a compose file is given, the line copies the indentation of its existing
    `--lora-modules` items and says which line it goes after.
    """
    item = lora_item(name, path)
    if compose_path is None or not compose_path.is_file():
        return ("under `- --lora-modules` in the seat's compose command list", f"- {item}")
    lines = compose_path.read_text(encoding="utf-8").splitlines()
    flag_at = None
    for i, line in enumerate(lines):
        if re.match(r"^\s*-\s*[\"']?--lora-modules[\"']?\s*$", line):
            flag_at = i
    if flag_at is None:
        indent = "      "
        return (f"in {compose_path.name}: add `{indent}- --lora-modules` to the command list, then",
                f"{indent}- {item}")
    flag_line = lines[flag_at]
    indent = flag_line[: len(flag_line) - len(flag_line.lstrip())]
    last = flag_at
    for j in range(flag_at + 1, len(lines)):
        s = lines[j].strip()
        if not s or s.startswith("#"):
            continue
        m = re.match(r"^(\s*)-\s*(.*)$", lines[j])
        if not m or len(m.group(1)) != len(indent) or _FLAG.match(m.group(2).strip("\"'")):
            break
        last = j
    quoted = f"'{item}'" if item.startswith("{") else item
    return (f"in {compose_path.name}, after line {last + 1} ({lines[last].strip()})", f"{indent}- {quoted}")
