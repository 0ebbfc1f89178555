"""The artifact kinds a gate appends its verdicts to, declared once: the one list of artifact names.

Each row says what the spec side and the writers must know of one kind of artifact, never how
its chain is checked: its name (the spec key `artifacts.<name>`, the ledger's `artifact` field,
`verify`'s kind), how messages name it, its chain format, its template per event, and what is
required of it. `spec` sits below `artifacts` and cannot import it, so the table lives here and is
declarative: `artifacts/_chain.py` gives each chain format its behaviour (`CHAINS`: markers,
verification, whether the newest marker ends the file) and `artifacts/_entries.py` its writer.

Read by `_schema` (the `artifacts.*` keys, `outside_workspace`'s choices), `_model.Artifacts`
(the paths by name), `_resolve` (the paths, registration's gaps), `_artifact_paths` (the guard),
and in `artifacts` by `_entries` (locks, preflight, rendering, writing), `_verify` and `_chain`.
A new kind is a row here and its four templates, one per event (docs/architecture.md, "An artifact kind").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Event = Literal["score", "ship", "amend", "note"]
EVENTS: tuple[Event, ...] = ("score", "ship", "amend", "note")
ChainName = Literal["markdown", "compose"]


@dataclass(frozen=True)
class ArtifactKind:
    """One kind of artifact: its name, its chain, its templates and what is required of it."""

    name: str                  # `artifacts.<name>` in the spec, the ledger's "artifact", verify's kind
    what: str                  # how messages name the file ("the gate record")
    noun: str                  # how messages name its entry's place ("record", "README", "compose comment")
    doc: str                   # the spec key's line in docs/reference.md
    chain: ChainName           # how its entries chain (`artifacts/_chain.CHAINS`)
    template: str              # the entry's template, `{event}` filled in (score, ship, amend, note)
    header: str | None = None  # rendered once, above the first entry of a new file
    required: bool = False     # the spec must name it
    # The events that refuse when it cannot take its entry (its `check` fails); at the others it is
    # skipped with a note and the other artifacts carry the entry.
    required_for: tuple[Event, ...] = EVENTS
    may_be_outside: bool = False   # `artifacts.outside_workspace` may name it (a mounted adapter volume)
    shared: bool = False           # several gates append to one file (each entry above its own adapter)
    folder: str | None = None      # its folder must exist at registration: voicegate creates the file only
    must_exist: bool = False       # voicegate inserts into it, never creates it

    def template_for(self, event: Event) -> str:
        return self.template.format(event=event)

    @property
    def skipped_at(self) -> tuple[Event, ...]:
        """The events at which it is skipped with a note when it cannot take its entry."""
        return tuple(e for e in EVENTS if e not in self.required_for)


# The one list, shared by every reader (never copied at import): a kind added to it — in the code, or by a test
# for the length of the test — is read, checked, locked, written and verified everywhere at once.
ARTIFACT_KINDS: list[ArtifactKind] = [
    ArtifactKind("record", "the gate record", "record", "the gate record, e.g. `gates/<gate>.md`",
                 "markdown", "record_{event}.md.j2", header="record_header.md.j2", required=True),
    ArtifactKind("readme", "the README", "README", "the adapter directory's `README.md`",
                 "markdown", "readme_{event}.md.j2", may_be_outside=True, folder="the adapter directory"),
    ArtifactKind("compose", "the compose file", "compose comment", "the seat's `compose.yaml`",
                 "compose", "compose_{event}.j2", required_for=("ship",), may_be_outside=True, shared=True,
                 must_exist=True),
]
"""In the order every artifact is written, locked in the ledger's entries and listed (the record first)."""

ARTIFACT_NAMES = tuple(k.name for k in ARTIFACT_KINDS)  # the built-in kinds' names (`ARTIFACT_KINDS` is the list)


def artifact_kind(name: str) -> ArtifactKind:
    """The kind named `name` (a KeyError for a name the table does not hold)."""
    for kind in ARTIFACT_KINDS:
        if kind.name == name:
            return kind
    raise KeyError(name)
