"""Resolution: checked spec values plus the world — files read, globs matched, paths anchored, environment read.

Everything that depends on something outside the spec text happens here, after
`_check` has passed the text itself, so a validation error never depends on which
machine the spec is read on.

Over 400 lines because every check that needs the world (files, globs, the environment) runs here,
after validation: `spec` has one boundary with I/O.
"""

from __future__ import annotations

import glob
import os
import re
import unicodedata
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from voicegate import _json as strict_json
from voicegate._errors import VoicegateError
from voicegate._yaml import load_strict
from voicegate.spec._artifact_kinds import ARTIFACT_KINDS
from voicegate.spec._check import Fail, check_mapping, check_prompt_list, failer
from voicegate.spec._model import (
    Arm,
    Artifacts,
    Copying,
    Corpora,
    Damage,
    GateSpec,
    Impostor,
    Probe,
    Prompt,
    Sampling,
    Seat,
    Voice,
)
from voicegate.spec._schema import PROBES_SCHEMA, Role
from voicegate.spec._views import view_spec
from voicegate.spec._workspace import shown_path

DATA_DIR_ENV = "VOICEGATE_DATA_DIR"

MIN_CORPUS_WORDS = 100
"""The fewest words a held-out or training corpus may have (the training corpus also needs `copying.max_run`)."""

# A run of letters: a word as scoring counts it (scoring/_tokens.py), apostrophes aside, which
# only ever joins two runs into one word; enough to say a corpus has words, without numpy or nltk.
_LETTERS = re.compile(r"[^\W\d_]+")


def resolve_path(root: Path, p: str) -> Path:
    """`p` with `~` expanded, anchored at the workspace root unless absolute."""
    path = Path(os.path.expanduser(p))
    return path if path.is_absolute() else root / path


def read_text(fail: Fail, key: str, path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise fail(key, f"file not found: {path}") from None
    except UnicodeDecodeError:
        raise fail(key, f"not UTF-8 text: {path}") from None
    except OSError as exc:
        raise fail(key, f"cannot read {path}: {exc.strerror}") from None


def yaml_where(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or "syntax error"
    return f"{problem} at line {mark.line + 1}" if mark is not None else problem


def _corpus(fail: Fail, root: Path, key: str, patterns: tuple[str, ...] | None, check_files: bool,
            cap_mb: float) -> tuple[Path, ...]:
    if patterns is None or not check_files:
        return ()
    files: list[Path] = []
    total = 0
    for i, pattern in enumerate(patterns):
        matched = sorted(Path(m) for m in glob.glob(str(resolve_path(root, pattern))) if Path(m).is_file())
        if not matched:
            raise fail(f"{key}[{i}]", f"glob {pattern!r} matches no file")
        for m in matched:
            _check_size(fail, key, m, cap_mb)  # before a byte is read: a 1 GB file once took 149 s and 13.7 GB
            if m not in files:
                total += _size(m)
                _check_set_size(fail, key, total, len(dict.fromkeys([*files, *matched])), cap_mb)
            read_text(fail, key, m)
        files += matched
    return tuple(dict.fromkeys(files))


SET_CAP_FILES = 8   # a corpus set (one key's files) may hold this many files at the per-file cap, no more


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _check_set_size(fail: Fail, key: str, total: int, files: int, cap_mb: float) -> None:
    """Refuse a corpus set over SET_CAP_FILES x the per-file cap: many files under the cap are as much memory as one
    over it, and are refused before a byte of them is read."""
    if total > SET_CAP_FILES * cap_mb * 2**20:
        raise fail(key, f"its files total over {total / 2**20:,.1f} MiB ({files} files so far), over the corpus "
                        "set cap "
                        f"of {SET_CAP_FILES} x {cap_mb:g} MiB (scoring holds about 20x a corpus in memory); trim the "
                        "set, or raise corpora.max_file_mb in the spec")


def _check_size(fail: Fail, key: str, path: Path, cap_mb: float) -> None:
    """Refuse a corpus file over `corpora.max_file_mb` (scoring holds ~20x a corpus's bytes in memory)."""
    try:
        size = path.stat().st_size
    except OSError:
        return  # read_text names what is wrong with it
    if size > cap_mb * 2**20:
        raise fail(key, f"{path} is {size / 2**20:,.1f} MiB, over the corpus cap of {cap_mb:g} MiB per file "
                        f"(scoring holds about 20x a corpus in memory); split or trim it, or raise "
                        f"corpora.max_file_mb in the spec")


def _prompts_file(fail: Fail, path: Path) -> tuple[tuple[str, str], ...]:
    text = read_text(fail, "prompts", path)
    if path.suffix != ".jsonl":
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        return tuple((str(i), ln) for i, ln in enumerate(lines))
    out: list[tuple[str, str]] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = strict_json.loads(line)
        except ValueError as exc:
            raise fail("prompts", f"{path} line {n}: not JSON ({exc})") from None
        pid = obj.get("id") if isinstance(obj, dict) else None
        if isinstance(pid, bool) or not isinstance(pid, (str, int)) or not isinstance(obj.get("text"), str):
            raise fail("prompts", f"{path} line {n}: needs 'id' and 'text'")
        out.append((str(pid), obj["text"]))
    return tuple(out)


def _prompts(fail: Fail, root: Path, value: Any, check_files: bool) -> tuple[tuple[Prompt, ...], Path | None]:
    if not isinstance(value, str):
        return tuple(Prompt(pid, text) for pid, text in check_prompt_list(value, fail)), None
    path = resolve_path(root, value)
    if not check_files:
        return (Prompt("0", f"(prompts from {path})"),), path
    kept = check_prompt_list(_prompts_file(fail, path), fail)
    return tuple(Prompt(pid, text) for pid, text in kept), path


def _words(text: str, enough: int) -> int:
    """How many words `text` has, counting no further than `enough`."""
    n = 0
    for _ in _LETTERS.finditer(unicodedata.normalize("NFKC", text)):
        n += 1
        if n >= enough:
            break
    return n


def check_corpus_words(spec: GateSpec) -> None:
    """Refuse a corpus that cannot decide honestly: a file without a word, or too few words in all.

    An empty held-out text gave a candidate a VOICE PASS, and an empty training text let a
    verbatim copier through as NOT-COPIED: an empty corpus measures nothing and passes everything.
    Registration asks this once; after it, the files' hashes keep them as they were.
    """
    fail = failer(spec.path)
    need = {"heldout": MIN_CORPUS_WORDS, "training": max(MIN_CORPUS_WORDS, spec.copying.max_run), "background": 1,
            "impostor": MIN_CORPUS_WORDS}
    groups = [(name, f"corpora.{name}", getattr(spec.corpora, name)) for name in ("heldout", "training", "background")]
    groups += [("impostor", f"corpora.impostors.{imp.author}", imp.files) for imp in spec.corpora.impostors]
    for name, key, files in groups:
        total = 0
        for path in files:
            n = _words(read_text(fail, key, path), need[name])
            if n == 0:
                raise fail(key, f"{shown_path(spec.root, path)} has no words (empty, blank or only "
                                "punctuation and digits); a registered corpus file must hold text")
            total += n
        if files and total < need[name]:
            where = ", ".join(shown_path(spec.root, p) for p in files)
            raise fail(key, f"{total} words in all ({where}); a {name} corpus needs at least {need[name]} words")


def check_impostors(spec: GateSpec) -> None:
    """Refuse impostor texts that cannot test specificity: the gate author's held-out text, or text an arm saw.

    Files are compared by content as well as by path, so a copy under another name is refused too.
    (The impostor's NAME is checked against the gate author's with the rest of the spec, in `_check`.)
    """
    from voicegate._hashing import sha256_file

    fail = failer(spec.path)
    root = spec.root

    def digests(paths: tuple[Path, ...]) -> dict[str, Path]:
        return {sha256_file(p): p for p in paths}

    held, train = digests(spec.corpora.heldout), digests(spec.corpora.training)
    owner: dict[str, str] = {}
    for imp in spec.corpora.impostors:
        key = f"corpora.impostors.{imp.author}"
        for digest, path in digests(imp.files).items():
            shown = shown_path(root, path)
            if digest in held:
                raise fail(key, f"{shown} is the gate author's held-out text ({shown_path(root, held[digest])}); "
                                "impostors are other authors' texts")
            if digest in train:
                raise fail(key, f"{shown} is a training file ({shown_path(root, train[digest])}): an impostor "
                                "must be text no arm was trained on")
            if digest in owner and owner[digest] != imp.author:
                raise fail(key, f"{shown} is also listed under {owner[digest]!r}: one text, one author")
            owner[digest] = imp.author
    _check_near_copies(spec, fail)


NEAR_COPY = 0.5   # an impostor file sharing this share of its 8-word sequences with another text is a copy of it


def _grams(path: Path, vocab: dict[str, int], n: int = 8) -> Any:
    """The file's distinct word n-grams, each as one 64-bit number (sorted numpy array), tokens as scoring reads
    them: NFKC, case-folded letter runs. `vocab` numbers the words, shared by every file compared."""
    import numpy as np

    words = re.findall(r"[^\W\d_]+(?:'[^\W\d_]+)*", unicodedata.normalize("NFKC", path.read_text(
        encoding="utf-8", errors="replace")).casefold())
    if len(words) < n:
        return np.zeros(0, dtype=np.uint64)
    ids = np.array([vocab.setdefault(w, len(vocab)) for w in words], dtype=np.uint64)
    # A polynomial hash over the n word numbers, wrapping at 2**64: two different n-grams of a few novels'
    # vocabulary share a value with odds about 10**-10, far below what moves a share by a percent.
    grams = np.zeros(len(words) - n + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for k in range(n):
            grams = grams * np.uint64(1_000_003) + ids[k:len(words) - n + 1 + k]
    grams.sort()   # np.unique's hash path measured slower than a sort at a novel's size
    return grams[np.concatenate(([True], grams[1:] != grams[:-1]))]


def _check_near_copies(spec: GateSpec, fail: Fail) -> None:
    """An impostor file that is a near-copy (not only a byte copy) of the held-out or training text, or of another
    impostor's file, is refused: a few changed words leave its 8-word sequences the other text's."""
    if not spec.corpora.impostors:
        return
    import numpy as np

    root = spec.root
    vocab: dict[str, int] = {}
    others: list[tuple[str, Path, Any]] = [
        *((f"the gate author's held-out text {shown_path(root, p)}", p, _grams(p, vocab))
          for p in spec.corpora.heldout),
        *((f"the training file {shown_path(root, p)}", p, _grams(p, vocab)) for p in spec.corpora.training)]
    for imp in spec.corpora.impostors:
        for path in imp.files:
            mine = _grams(path, vocab)
            if not len(mine):
                continue
            for what, other, theirs in others:
                share = len(np.intersect1d(mine, theirs, assume_unique=True)) / len(mine)
                if other != path and share >= NEAR_COPY:
                    raise fail(f"corpora.impostors.{imp.author}",
                               f"{shown_path(root, path)} shares {share:.0%} of its 8-word sequences with {what}: a "
                               "near-copy; impostors are other authors' texts no arm was trained on")
            others.append((f"impostor {imp.author!r}: {shown_path(root, path)}", path, mine))


def impostor_warnings(spec: GateSpec) -> list[str]:
    """What weakens a specificity check without making it wrong, as `register` prints it."""
    return [f"warning: {w}" for w in thin_evidence(spec)]


def thin_evidence(spec: GateSpec) -> list[str]:
    """What weakens a specificity check without making it wrong: one impostor, a background mostly of one
    author's text, an impostor's text that is also in the background (the ruler it is measured with is built
    on it). One line each; `register` prints them, and a gate registered since the `thin-evidence` check
    carries them in every score result."""
    imps = spec.corpora.impostors
    if not imps:
        return []
    out = []
    if len(imps) == 1:
        out.append(f"one impostor ({imps[0].author!r}): SPECIFIC then says 'nearer the author than "
                   f"{imps[0].author}', not than other authors; register two or more")
    one = _one_background_author(spec.corpora.background)
    if one is not None:
        out.append(f"corpora.background is one author's text ({one}): the ruler every margin is measured "
                   "with (its word list and z-scores) then describes that writer's habits, and an impostor near "
                   "them reads as near the author; give the background several authors")
    else:
        most = _most_background_author(spec.corpora.background)
        if most is not None:
            out.append(f"corpora.background is mostly one author's text ({most}): the ruler every margin is "
                       "measured with leans on that writer's habits, and an impostor near them reads as near the "
                       "author; balance the background across authors")
    background = {p.resolve() for p in spec.corpora.background}
    for imp in imps:
        shared = [shown_path(spec.root, p) for p in imp.files if p.resolve() in background]
        if shared:
            out.append(f"impostor {imp.author!r}: {', '.join(shared)} "
                       f"{'is' if len(shared) == 1 else 'are'} also in corpora.background: the gate's ruler (its "
                       "word list and z-scores) is built on the very text the candidates are compared with as "
                       "another author")
    return out


def _one_background_author(files: tuple[Path, ...] | list[Path]) -> str | None:
    """How the background reads as one author, or None: a single file, or files whose names all begin with one
    `Author_` (the corpora's `Author_Title.txt` naming; names without it say nothing, so nothing is claimed)."""
    if len(files) == 1:
        return f"a single file, {files[0].name}"
    prefixes = {f.name.split("_", 1)[0] if "_" in f.name else None for f in files}
    if len(prefixes) == 1 and None not in prefixes and files:
        return f"every one of its {len(files)} files is named {next(iter(prefixes))}_…"
    return None


MOST_BACKGROUND = 0.5  # one author's share of the background's bytes above which the ruler is mostly hers


def _most_background_author(files: tuple[Path, ...] | list[Path]) -> str | None:
    """How the background reads as mostly one author, or None: files named `Author_…` by one author holding
    more than half of the background's bytes (files not named so count toward no author, only the total)."""
    sizes: dict[str, int] = {}
    total = 0
    for f in files:
        try:
            size = f.stat().st_size
        except OSError:
            continue
        total += size
        if "_" in f.name:
            author = f.name.split("_", 1)[0]
            sizes[author] = sizes.get(author, 0) + size
    if not sizes or total == 0:
        return None
    author, size = max(sizes.items(), key=lambda kv: (kv[1], kv[0]))
    if size / total <= MOST_BACKGROUND:
        return None
    return f"its files named {author}_… hold {size / total:.0%} of its bytes"


def load_probes(spec_fail: Fail, path: Path) -> tuple[Probe, ...]:
    """The probes file `damage.probes` names, checked against PROBES_SCHEMA."""

    def fail(key: str, problem: str) -> VoicegateError:
        return spec_fail(key, f"{path}: {problem}")

    text = read_text(spec_fail, "damage.probes", path)
    try:
        data = load_strict(text)
    except yaml.YAMLError as exc:
        raise fail("damage.probes", f"not valid YAML ({yaml_where(exc)})") from None
    mapping = data if isinstance(data, dict) else {"probes": data}  # {probes: [...]} or the bare list
    items = check_mapping(mapping, fail, PROBES_SCHEMA, key="damage")["probes"]
    probes = tuple(Probe(p["id"], p["prompt"], p["check"]) for p in items)
    if len({p.id for p in probes}) != len(probes):
        raise fail("damage.probes", "probe ids are not unique")
    return probes


def missing_files(values: Mapping[str, Any], root: Path, *, artifacts: bool = False) -> tuple[list[str], list[str]]:
    """Every file the spec needs that is not there: (missing, notes), each item naming its key.

    All of them at once, so a newcomer fixes the spec's paths in one go rather than one error
    at a time. `artifacts` (registration) adds `artifact_gaps`.
    """
    v = values
    missing: list[str] = []
    if isinstance(v["prompts"], str):
        prompts = resolve_path(root, v["prompts"])
        if not prompts.is_file():
            missing.append(f"prompts {shown_path(root, prompts)}")
    groups = [(f"corpora.{name}", v[f"corpora.{name}"] or ()) for name in ("heldout", "training", "background")]
    groups += [(f"corpora.impostors.{author}", globs) for author, globs in v["corpora.impostors"] or ()]
    for key, patterns in groups:
        for i, pattern in enumerate(patterns):
            if not any(Path(m).is_file() for m in glob.glob(str(resolve_path(root, pattern)))):
                missing.append(f"{key}[{i}] glob {pattern!r} matches no file")
    if v["damage.probes"]:
        probes = resolve_path(root, v["damage.probes"])
        if not probes.is_file():
            missing.append(f"damage.probes {shown_path(root, probes)}")
    notes: list[str] = []
    if artifacts:
        gaps, notes = artifact_gaps(v, root)
        missing += gaps
    return missing, notes


def artifact_gaps(values: Mapping[str, Any], root: Path) -> tuple[list[str], list[str]]:
    """What registration needs of the artifacts' paths: (missing, notes).

    An artifact with a `folder` (the adapter README) needs its folder to exist (voicegate creates
    the file, not its folder); one voicegate only inserts into (`must_exist`: compose.yaml) that does
    not exist yet is only a note: `score` then writes no entry there, and `ship` needs it.
    """
    missing: list[str] = []
    notes: list[str] = []
    for kind in ARTIFACT_KINDS:
        if not values[f"artifacts.{kind.name}"]:
            continue
        path = resolve_path(root, values[f"artifacts.{kind.name}"])
        if kind.folder and not path.parent.is_dir():
            missing.append(f"artifacts.{kind.name} {shown_path(root, path)} (its folder "
                           f"{shown_path(root, path.parent)}/ does not exist; voicegate creates the {kind.noun}, "
                           f"not {kind.folder})")
        if kind.must_exist and not path.is_file() and not kind.skipped_at:
            missing.append(f"artifacts.{kind.name} {shown_path(root, path)} (voicegate appends to it, "
                           "it does not create it)")
        elif kind.must_exist and not path.is_file():
            notes.append(f"artifacts.{kind.name} {shown_path(root, path)} does not exist yet "
                         f"({kind.skipped_at[0]} then writes no {kind.noun}; {' and '.join(kind.required_for)} "
                         "needs it)")
    return missing, notes


def _model(fail: Fail, root: Path, values: Mapping[str, Any],
           check_files: bool) -> tuple[Path | None, tuple[Path, ...]]:
    """(directory, files) of the model the spec's view measures through, if it is local; a hub name unpinned
    is refused. Every view that declares a `Model` gets this, whatever its name (`_views.ViewSpec`)."""
    model = view_spec(values["voice.view"]).model
    if model is None or values[model.key] is None:
        return None, ()
    local = resolve_path(root, values[model.key])
    if local.is_dir():
        return local, tuple(sorted(p for p in local.rglob("*") if p.is_file())) if check_files else ()
    if values[model.revision] is None:
        raise fail(model.revision, "a hub model must be pinned by revision (or give a local path)")
    return None, ()


def resolve(values: Mapping[str, Any], raw: dict[str, Any], path: Path, root: Path, *,
            env: Mapping[str, str] | None = None, check_files: bool = True,
            check_artifacts: bool = False) -> GateSpec:
    """The GateSpec for checked `values`: corpora globbed, prompt and probe files read, paths anchored.

    `check_files` off only lints a spec whose corpora live elsewhere (e.g. on the fleet's storage).
    Every missing input file is named in one error; `check_artifacts` (registration) adds the
    artifacts' folders to what must exist.
    """
    env = os.environ if env is None else env
    fail = failer(path)
    v = values
    if check_files:
        missing, notes = missing_files(v, root, artifacts=check_artifacts)
        if missing:
            also = f" (also: {'; '.join(notes)})" if notes else ""
            what = "a file the spec needs is missing" if len(missing) == 1 else \
                f"{len(missing)} files the spec needs are missing"
            raise fail("", f"{what}: {'; '.join(missing)}{also}")
    prompts, prompts_path = _prompts(fail, root, v["prompts"], check_files)
    voice = Voice(view=v["voice.view"], mfw=v["voice.mfw"], chunk=v["voice.chunk"], model=v["voice.model"],
                  revision=v["voice.revision"], specificity=v["voice.specificity"])
    cap = v["corpora.max_file_mb"]
    corpora = Corpora(heldout=_corpus(fail, root, "corpora.heldout", v["corpora.heldout"], check_files, cap),
                      training=_corpus(fail, root, "corpora.training", v["corpora.training"], check_files, cap),
                      background=_corpus(fail, root, "corpora.background", v["corpora.background"], check_files,
                                         cap),
                      impostors=tuple(Impostor(author, _corpus(fail, root, f"corpora.impostors.{author}", globs,
                                                               check_files, cap))
                                      for author, globs in v["corpora.impostors"] or ()))
    model_dir, model_files = _model(fail, root, v, check_files)
    probes_path = resolve_path(root, v["damage.probes"]) if v["damage.probes"] else None
    damage = Damage(probes_path=probes_path,
                    probes=load_probes(fail, probes_path) if probes_path and check_files else (),
                    tolerance=v["damage.tolerance"], truncation_decides=v["damage.truncation_decides"])
    artifacts = {k.name: resolve_path(root, v[f"artifacts.{k.name}"]) for k in ARTIFACT_KINDS
                 if v[f"artifacts.{k.name}"]}
    return GateSpec(
        path=path, root=root, raw=raw, gate=v["gate"], author=v["author"],
        seat=Seat(url=v["seat.url"], base_model=v["seat.base_model"], api_key_env=v["seat.api_key_env"],
                  concurrency=v["seat.concurrency"], timeout=v["seat.timeout"],
                  replicas=v["seat.replicas"] or ()),
        arms=tuple(Arm(a["name"], a["model"], Role(a["role"]), a["adapter_path"], a.get("voice_of"))
                   for a in v["arms"]),
        prompts=prompts, prompts_path=prompts_path, seeds=v["seeds"],
        sampling=Sampling(v["sampling.temperature"], v["sampling.top_p"], v["sampling.max_tokens"]),
        corpora=corpora, voice=voice,
        copying=Copying(n=v["copying.n"], tolerance=v["copying.tolerance"], max_run=v["copying.max_run"]),
        damage=damage, floor_rule=v["floor.rule"],
        artifacts=Artifacts(artifacts, outside_workspace=v["artifacts.outside_workspace"]),
        data_dir=resolve_path(root, env.get(DATA_DIR_ENV) or v["data_dir"]),
        prefer=v["prefer"], expected_words=v["expected_words"], order_seed=v["order_seed"],
        model_dir=model_dir, model_files=model_files, values=dict(values),
    )
