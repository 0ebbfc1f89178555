"""docs/novels.tsv, the manifest of the british-fiction novels, against the corpus folder when it is present.

The manifest is built from the folder's own overview.tsv (textID, author, title, first publication and its
comment) with each prepared file's size and sha256, and says which public-domain edition to look for
(docs/fixtures.md says how the files were prepared). A copy of the folder that differs in one byte, a novel
added or gone, or an overview row the manifest does not carry fails here, naming it.
"""

from __future__ import annotations

import csv
import hashlib
import re
import unicodedata
from pathlib import Path

import pytest
from helpers.shared import CORPUS

MANIFEST = Path(__file__).resolve().parents[2] / "docs" / "novels.tsv"
COLUMNS = ["textID", "file", "author", "title", "first_published", "sha256", "bytes", "public_domain_source",
           "overview_comment"]


def _plain(name: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", name) if not unicodedata.combining(c))


def _read(path: Path) -> list[list[str]]:
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.reader(fh, delimiter="\t"))


def test_the_manifest_names_every_novel_once_with_its_hash_and_source() -> None:
    header, *rows = _read(MANIFEST)
    assert header == COLUMNS
    assert [r[0] for r in rows] == [str(i) for i in range(1, len(rows) + 1)]
    files = [r[1] for r in rows if r[1] != "-"]
    assert len(files) == len(set(files)) == 26 and all(re.fullmatch(r"[A-Z][A-Za-z]+_[A-Z][a-z]+\.txt", f)
                                                      for f in files)
    for r in rows:
        assert len(r) == len(COLUMNS), r
        assert re.fullmatch(r"1[78]\d\d", r[4]), r
        assert r[7] == f"Project Gutenberg: {r[3]}, by {r[2]}"
        if r[1] != "-":
            assert re.fullmatch(r"[0-9a-f]{64}", r[5]) and int(r[6]) > 100_000, r


def test_the_corpus_folder_is_the_one_the_manifest_describes() -> None:
    if not (CORPUS / "overview.tsv").is_file():
        pytest.skip(f"british-fiction corpus not present at {CORPUS}")
    _, *rows = _read(MANIFEST)
    _, *overview = _read(CORPUS / "overview.tsv")
    by_id = {o[0]: o for o in overview}
    assert sorted(by_id, key=int) == [r[0] for r in rows], "the overview's textIDs and the manifest's differ"
    problems = []
    for r in rows:
        o = by_id[r[0]]
        surname, given = (part.strip() for part in o[1].split(",", 1))
        comment = o[6].strip() if len(o) > 6 else ""
        # The manifest spells names in full and with their accents (the overview: "Bronte, Anne", "Trollope, Antony")
        if _plain(r[2]) != f"{given} {surname}".replace("Antony", "Anthony") or (o[4], comment) != (r[4], r[8]):
            problems.append(f"textID {r[0]}: overview {o[1].strip()!r}, {o[4]}, {comment!r}; manifest {r[2]!r}, "
                            f"{r[4]}, {r[8]!r}")
        if r[1] == "-":
            if any(CORPUS.glob(f"*_{o[3].split(',')[0]}*.txt")):
                problems.append(f"textID {r[0]}: the folder has {o[3]!r}, the manifest says it does not")
            continue
        path = CORPUS / r[1]
        if not path.is_file():
            problems.append(f"{r[1]}: in the manifest, not in {CORPUS}")
            continue
        data = path.read_bytes()
        if (hashlib.sha256(data).hexdigest(), str(len(data))) != (r[5], r[6]):
            problems.append(f"{r[1]}: sha256 {hashlib.sha256(data).hexdigest()} ({len(data)} bytes), the manifest "
                            f"{r[5]} ({r[6]} bytes)")
    extra = sorted({p.name for p in CORPUS.glob("*.txt")} - {r[1] for r in rows})
    problems += [f"{name}: in {CORPUS}, not in the manifest" for name in extra]
    assert not problems, "\n".join(problems)
