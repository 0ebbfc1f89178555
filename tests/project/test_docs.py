"""The reference docs and the CLI/schema list the same commands, options and keys."""

from __future__ import annotations

import re
from pathlib import Path

import typer

from voicegate.cli import app
from voicegate.spec._spec import SCHEMA

REPO = Path(__file__).resolve().parents[2]
REFERENCE = (REPO / "docs" / "reference.md").read_text(encoding="utf-8")


def _cli() -> dict[str, set[str]]:
    """command path -> its long options, from the real typer application."""
    found: dict[str, set[str]] = {}

    def walk(command, prefix: list[str]) -> None:
        if hasattr(command, "commands"):
            for name, sub in command.commands.items():
                walk(sub, [*prefix, name])
            return
        found[" ".join(prefix)] = {o for p in command.params if getattr(p, "param_type_name", "") == "option"
                                   for o in p.opts if o.startswith("--") and o != "--help"}

    walk(typer.main.get_command(app), [])
    return found


def _documented() -> dict[str, set[str]]:
    sections = re.split(r"^### `voicegate ([a-z ]+)`$", REFERENCE, flags=re.MULTILINE)
    docs: dict[str, set[str]] = {}
    for name, body in zip(sections[1::2], sections[2::2], strict=True):
        options = re.search(r"^Options:(.*?)(?:\n\n|\Z)", body, flags=re.MULTILINE | re.DOTALL)
        assert options, f"no Options line for {name}"
        docs[name] = set(re.findall(r"`(--[a-z-]+)`", options.group(1)))
    return docs


def test_every_documented_command_exists_and_every_command_is_documented() -> None:
    assert set(_documented()) == set(_cli())


def test_every_documented_option_exists_and_every_option_is_documented() -> None:
    cli = _cli()
    for name, options in _documented().items():
        assert options == cli[name], name


def test_every_documented_spec_key_exists_and_every_key_is_documented() -> None:
    schema = {k if not section else f"{section}.{k}"
              for section, keys in SCHEMA.items() for k in keys}
    spec_table = REFERENCE.split("## Spec keys", 1)[1].split("## `voicegate score --json`", 1)[0]
    documented = set(re.findall(r"^\| `([a-z_\[\].]+)` \|", spec_table, flags=re.MULTILINE))
    assert documented == schema


def test_readme_links_the_docs_and_the_screenshot() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for target in re.findall(r"\]\(((?:docs)/[^)]+)\)", readme):
        assert (REPO / target).is_file(), target
    assert "docs/report-lv-bronte.png" in readme
    for doc in ("tutorial", "concepts", "reference", "operations"):
        assert f"docs/{doc}.md" in readme
