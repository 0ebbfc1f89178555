"""The kinds a spec value can have: each checks a parsed YAML value and says what it is for the docs.

A kind never coerces: `"false"` is not a boolean and `[1]` is not a number, because a
value that silently became another would change what was registered. A kind raises
`Problem`; the validator adds the file and the key.

Over 400 lines because each kind of spec value is a small class, its check beside its description
for the docs; they are one family, read together.
"""

from __future__ import annotations

import math
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from voicegate._seat_url import seat_url_problem, shown

MAX_SEED = 2**63 - 1


class Problem(Exception):
    """What is wrong with one value; `sub` extends its key (`[1]`, `.regex`) when a part is at fault."""

    def __init__(self, message: str, sub: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.sub = sub


class Kind(ABC):
    """A value's type and bounds: `check` returns the value to use, `describe` is the docs' type column."""

    @abstractmethod
    def check(self, value: Any) -> Any: ...

    @abstractmethod
    def describe(self) -> str: ...


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _shown(n: float) -> str:
    if n == MAX_SEED:
        return "2⁶³−1"
    return (f"{n:,}" if n >= 10_000 else str(n)) if isinstance(n, int) else f"{n:g}"


@dataclass(frozen=True)
class Text(Kind):
    """A non-empty string; `shown` names what it is (a path, free text)."""

    shown: str = "string"

    def check(self, value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise Problem("must be a non-empty string")
        return value

    def describe(self) -> str:
        return self.shown


# What no one-line value may hold: C0/C1 controls (tab, CR, LF, NEL, ...), the Unicode line and
# paragraph separators, lone surrogates, and the bidirectional overrides that make a line read
# differently from its bytes. A value with one of them would become two lines (or a lie) in an artifact.
_NOT_ONE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def line_problem(text: str) -> str | None:
    """Why `text` is not one line of text (None when it is)."""
    bad = _NOT_ONE_LINE.search(text)
    if bad is None:
        return None
    return f"must be one line of text: it contains a line break or control character (U+{ord(bad.group()):04X})"


@dataclass(frozen=True)
class Line(Text):
    """A non-empty string on one line: a name, a path, a model id (it lands in artifacts and paths)."""

    def check(self, value: Any) -> str:
        text = super().check(value)
        problem = line_problem(text)
        if problem is not None:
            raise Problem(problem)
        return text


@dataclass(frozen=True)
class Pattern(Kind):
    """A string that must match `regex` in full; `problem` may use {value!r}."""

    regex: str
    problem: str
    shown: str

    def check(self, value: Any) -> str:
        text = Text().check(value)
        if not re.fullmatch(self.regex, text):
            raise Problem(self.problem.format(value=text))
        return text

    def describe(self) -> str:
        return self.shown


@dataclass(frozen=True)
class SeatUrl(Kind):
    """A seat's OpenAI base URL, checked as `generate --seat` and `voicegate seat --seat` check it."""

    def check(self, value: Any) -> str:
        return self.check_at(value, "")

    def check_at(self, value: Any, sub: str) -> str:
        problem = seat_url_problem(value)
        if problem is not None:
            raise Problem(problem, sub)
        return str(value).rstrip("/")

    def describe(self) -> str:
        return "http(s) URL"


@dataclass(frozen=True)
class SeatUrls(Kind):
    """A non-empty list of distinct seat URLs: the replicas one gate is spread over."""

    def check(self, value: Any) -> tuple[str, ...]:
        if not isinstance(value, list) or not value:
            raise Problem("must be a non-empty list of http(s) URLs such as http://host:port/v1")
        urls: list[str] = []
        for i, item in enumerate(value):
            url = SeatUrl().check_at(item, f"[{i}]")
            if url in urls:
                raise Problem(f"{shown(url)!r} is listed twice", f"[{i}]")
            urls.append(url)
        return tuple(urls)

    def describe(self) -> str:
        return "list of http(s) URLs"


@dataclass(frozen=True)
class Integer(Kind):
    lo: int | None = None
    hi: int | None = None

    def check(self, value: Any) -> int:
        if not _is_int(value):
            raise Problem(f"must be an integer, got {value!r}")
        if self.lo is not None and value < self.lo:
            raise Problem(f"must be >= {self.lo}, got {value}")
        if self.hi is not None and value > self.hi:
            raise Problem(f"must be <= {self.hi}, got {value}")
        return int(value)

    def describe(self) -> str:
        if self.lo is not None and self.hi is not None:
            return f"integer {_shown(self.lo)}–{_shown(self.hi)}"
        return "integer" if self.lo is None else f"integer ≥ {_shown(self.lo)}"


@dataclass(frozen=True)
class Number(Kind):
    lo: float
    hi: float
    shown: str = ""

    def check(self, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise Problem(f"must be a number, got {value!r}")
        if not self.lo <= value <= self.hi:
            raise Problem(f"must be between {self.lo} and {self.hi}, got {value}")
        return float(value)

    def describe(self) -> str:
        return self.shown or f"number {_shown(self.lo)}–{_shown(self.hi)}"


@dataclass(frozen=True)
class Flag(Kind):
    def check(self, value: Any) -> bool:
        if not isinstance(value, bool):
            raise Problem(f"must be true or false, got {value!r}")
        return value

    def describe(self) -> str:
        return "true or false"


@dataclass(frozen=True)
class Choice(Kind):
    """One of `options`; `problem` may use {value!r} and {options}."""

    options: tuple[str, ...]
    problem: str = "must be one of {options}, got {value!r}"

    def check(self, value: Any) -> str:
        if not isinstance(value, str) or value not in self.options:
            raise Problem(self.problem.format(value=value, options=", ".join(self.options)))
        return value

    def describe(self) -> str:
        shown = [f"`{o}`" for o in self.options]
        return " or ".join(shown) if len(shown) <= 2 else "one of " + ", ".join(shown)


@dataclass(frozen=True)
class Ident(Kind):
    """An id given as a string or an integer (YAML reads `7` as a number); kept as a string."""

    def check(self, value: Any) -> str:
        if _is_int(value):
            return str(value)
        if isinstance(value, str) and value.strip():
            return value
        raise Problem(f"must be a string or an integer, got {value!r}")

    def describe(self) -> str:
        return "string or integer"


@dataclass(frozen=True)
class Globs(Kind):
    """One glob or a non-empty list of them; matching them is resolution, not validation."""

    def check(self, value: Any) -> tuple[str, ...]:
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not items:
            raise Problem("must be a non-empty list of file globs")
        for i, item in enumerate(items):
            if not isinstance(item, str) or not item.strip():
                raise Problem("must be a non-empty string", f"[{i}]")
            problem = line_problem(item)
            if problem is not None:
                raise Problem(problem, f"[{i}]")
        return tuple(items)

    def describe(self) -> str:
        return "glob or list of globs"


@dataclass(frozen=True)
class AuthorGlobs(Kind):
    """A mapping of author name (one line) to that author's file globs: the impostors of a gate.

    Validated to a tuple of (author, globs) pairs in the order written; an empty group is refused
    (an impostor with no text measures nothing), and so is a name written twice up to case and spacing.
    """

    def check(self, value: Any) -> tuple[tuple[str, tuple[str, ...]], ...]:
        if not isinstance(value, dict) or not value:
            raise Problem("must be a mapping of author name to a list of file globs, e.g. {Anne Bronte: [...]}")
        out: list[tuple[str, tuple[str, ...]]] = []
        seen: dict[str, str] = {}
        for author, globs in value.items():
            if not isinstance(author, str) or not author.strip():
                raise Problem(f"{author!r}: an impostor's name must be a non-empty string")
            problem = line_problem(author)
            if problem is not None:
                # the name shown escaped: a raw line break would cut the one-line refusal before its reason
                raise Problem(f"{author!r}: an impostor's name {problem}", "")
            key = author_key(author)
            if key in seen:
                raise Problem(f"{author!r} and {seen[key]!r} name the same author", f".{author}")
            seen[key] = author
            if isinstance(globs, list) and not globs:
                raise Problem("an empty impostor group: give that author's files (or drop the author)", f".{author}")
            try:
                out.append((author, Globs().check(globs)))
            except Problem as exc:
                raise Problem(exc.message, f".{author}{exc.sub}") from None
        return tuple(out)

    def describe(self) -> str:
        return "mapping: author → globs"


def author_key(name: str) -> str:
    """An author's name compared as people write it: case, accents, punctuation and spacing aside, and letters
    that only look Latin (a Cyrillic С, a Greek Ο) read as the Latin letter they pass for."""
    import unicodedata

    plain = "".join(c for c in unicodedata.normalize("NFKD", name) if not unicodedata.combining(c))
    plain = plain.translate(_CONFUSABLES)
    return " ".join(re.sub(r"[^\w]+", " ", plain.casefold()).split())


# The Cyrillic and Greek letters that pass for Latin ones in print (Unicode's confusables, the letters only):
# enough that an impostor named with a look-alike of the gate author's name is the gate author.
_CONFUSABLES = str.maketrans({
    **dict(zip("АВСЕНІЈКМОРЅТХУаеіјорсѕхуԁԛԝһ", "ABCEHIJKMOPSTXYaeijopcsxydqwh", strict=True)),
    **dict(zip("ΑΒΕΖΗΙΚΜΝΟΡΤΥΧοιν", "ABEZHIKMNOPTYXoiv", strict=True)),
})


@dataclass(frozen=True)
class Names(Kind):
    """One name or a list of names (which names are allowed depends on other keys)."""

    problem: str

    def check(self, value: Any) -> tuple[str, ...]:
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
            raise Problem(self.problem)
        return tuple(items)

    def describe(self) -> str:
        return "name or list of names"


@dataclass(frozen=True)
class Subset(Kind):
    """Some of `options`: one of them or a list of distinct ones (an empty list: none)."""

    options: tuple[str, ...]

    def check(self, value: Any) -> tuple[str, ...]:
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list):
            raise Problem(f"must be a list of: {', '.join(self.options)}")
        for i, item in enumerate(items):
            if not isinstance(item, str) or item not in self.options:
                raise Problem(f"{item!r} is not one of {', '.join(self.options)}", f"[{i}]")
        if len(set(items)) != len(items):
            raise Problem("names one twice")
        return tuple(items)

    def describe(self) -> str:
        return "list of " + ", ".join(f"`{o}`" for o in self.options)


@dataclass(frozen=True)
class IntList(Kind):
    """A non-empty list of unique integers within [lo, hi]."""

    lo: int
    hi: int
    what: str

    def check(self, value: Any) -> tuple[int, ...]:
        if not isinstance(value, list) or not value:
            raise Problem("must be a non-empty list of integers")
        each = Integer(self.lo, self.hi)
        out: list[int] = []
        for i, item in enumerate(value):
            try:
                out.append(each.check(item))
            except Problem as exc:
                raise Problem(exc.message, f"[{i}]") from None
        if len(set(out)) != len(out):
            raise Problem(f"{self.what} are not unique")
        return tuple(out)

    def describe(self) -> str:
        return f"list of unique integers {_shown(self.lo)}–{_shown(self.hi)}"


@dataclass(frozen=True)
class Prompts(Kind):
    """A prompts file (read at resolution) or an inline list of strings or {id, text}.

    Validated to `str` (the file) or a tuple of (id, text) pairs.
    """

    def check(self, value: Any) -> str | tuple[tuple[str, str], ...]:
        if isinstance(value, str):
            return Line().check(value)
        if not isinstance(value, list):
            raise Problem("must be a file path or a list of prompts")
        out: list[tuple[str, str]] = []
        for i, item in enumerate(value):
            if isinstance(item, str):
                out.append((str(i), item))
            elif isinstance(item, dict) and set(item) == {"id", "text"}:
                try:
                    pid = Ident().check(item["id"])
                except Problem as exc:
                    raise Problem(exc.message, f"[{i}].id") from None
                try:
                    out.append((pid, Text().check(item["text"])))
                except Problem as exc:
                    raise Problem(exc.message, f"[{i}].text") from None
            else:
                raise Problem("must be a string or {id, text}", f"[{i}]")
        return tuple(out)

    def describe(self) -> str:
        return "path or list"


@dataclass(frozen=True)
class Answers(Kind):
    """`exact:` an answer (a string or a number, compared as text) or a non-empty list of them."""

    def check(self, value: Any) -> Any:
        items = value if isinstance(value, list) else [value]
        if not items or not all(isinstance(a, (str, int, float)) and not isinstance(a, bool) for a in items):
            raise Problem(f"must be an answer or a list of answers, got {value!r}")
        return value

    def describe(self) -> str:
        return "answer or list of answers"


@dataclass(frozen=True)
class JsonKeys(Kind):
    """`json:` true (the reply parses as JSON) or the keys the parsed object must have."""

    def check(self, value: Any) -> Any:
        if isinstance(value, bool) or (isinstance(value, list) and all(isinstance(k, str) for k in value)):
            return value
        raise Problem(f"must be true or a list of keys, got {value!r}")

    def describe(self) -> str:
        return "true or list of keys"


CHECK_TYPES: dict[str, Kind] = {"exact": Answers(), "regex": Text("pattern"), "refuse": Flag(),
                                "max_words": Integer(0), "json": JsonKeys()}


@dataclass(frozen=True)
class ProbeCheck(Kind):
    """A probe's check: a mapping with exactly one of CHECK_TYPES, its value of that check's kind."""

    def check(self, value: Any) -> dict[str, Any]:
        if not isinstance(value, dict) or len(value) != 1 or next(iter(value)) not in CHECK_TYPES:
            raise Problem(f"must be one of {', '.join(CHECK_TYPES)}")
        (name, arg), = value.items()
        try:
            CHECK_TYPES[name].check(arg)
        except Problem as exc:
            raise Problem(exc.message, f".{name}") from None
        if name == "regex":
            try:
                re.compile(arg)
            except re.error as exc:
                raise Problem(f"bad regular expression: {exc}", ".regex") from None
        return dict(value)

    def describe(self) -> str:
        return "mapping: one check"


@dataclass(frozen=True)
class Section(Kind):
    """A mapping whose keys are declared under this key's path; the validator walks them."""

    def check(self, value: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise Problem(f"must be a mapping, got {type(value).__name__}")
        return value

    def describe(self) -> str:
        return "mapping"


@dataclass(frozen=True)
class Records(Kind):
    """A non-empty list of mappings whose keys are declared under `<path>[]`."""

    problem: str = "must be a non-empty list"

    def check(self, value: Any) -> list[Any]:
        if not isinstance(value, list) or not value:
            raise Problem(self.problem)
        return value

    def describe(self) -> str:
        return "list of mappings"
