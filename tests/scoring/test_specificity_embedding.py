"""Specificity under the embedding view: the same seam, another view.

The view measures every target (the gate author, each impostor) through one `measure`, so the
axis needs nothing view-specific. The encoder here is a deterministic stand-in passed to
`score_gate` (the real model path is tests/scoring/test_scoring_embedding.py): a text's vector is its share
of words from each third of the constructed vocabulary, which is exactly what the three word
"styles" of `_workspace.text` differ in.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers.workspace import GATE, VOCAB, text, voice_rows
from helpers.workspace import IMPOSTOR_CORPORA as CORPORA
from helpers.workspace import impostor_spec as _spec
from helpers.workspace import impostor_workspace as _workspace

from voicegate.scoring import score_gate
from voicegate.spec._registration import register
from voicegate.spec._spec import load_spec

INDEX = {w: i for i, w in enumerate(dict.fromkeys(VOCAB))}


def thirds(texts: list[str]) -> np.ndarray:
    out = np.zeros((len(texts), 4))
    for row, t in enumerate(texts):
        for w in t.split():
            i = INDEX.get(w)
            out[row, 3 if i is None or i >= 400 else i % 3] += 1
    return out + 1e-9


@pytest.fixture
def result(tmp_path: Path) -> dict:
    spec = _spec({"Impostor One": ["corpora/imp/*.txt"]})
    spec["voice"] = {"view": "embedding", "model": "example/stand-in", "revision": "0" * 40}
    root = _workspace(tmp_path / "ws", spec)
    loaded = load_spec(root, GATE)
    register(loaded)
    rows = voice_rows({"base": lambda s, p: text(160, f"b/{s}/{p}"), "cand": lambda s, p: text(160, f"c/{s}/{p}", 0),
                       "mimic": lambda s, p: text(160, f"m/{s}/{p}", 1)})
    return score_gate(loaded, rows, cache_dir=root / "runs" / ".cache", encode=thirds).to_json()


def test_the_embedding_view_gives_the_same_axis(result: dict):
    arms = {a["name"]: a for a in result["arms"]}
    assert result["signature"]["view"] == "embedding"
    assert arms["cand"]["specificity"]["verdict"]["pairwise-max-spread"] == "SPECIFIC"
    mimic = arms["mimic"]["specificity"]
    assert mimic["verdict"]["pairwise-max-spread"] == "NOT-SPECIFIC" and mimic["nearest"] == "Impostor One"
    assert mimic["deltas"]["Impostor One"] > mimic["deltas"]["Test Author"]
    # the embedding view has no chunk-AUC ruler: it says so (None), it does not invent one
    assert result["impostors"]["ruler_auc"] == {"Impostor One": None}
    assert CORPORA["corpora/imp/imp.txt"]  # the impostor's text is the constructed style-1 file
