"""The embedding view with a tiny sentence-transformers model built here (no hub access).

Proves the formula (centroid cosine distance, H chunked to the registered
generation length) and that re-scoring and amending re-embed nothing: the
model's encode calls are counted.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from helpers.workspace import GATE, SEEDS, arm, result_json, text, unrelated, voice_rows
from helpers.workspace import scoring_workspace as make_workspace

from voicegate._errors import VoicegateError
from voicegate.scoring import score_gate
from voicegate.scoring._embedding import chunk_words
from voicegate.spec._registration import check_registered
from voicegate.spec._spec import load_spec

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def build_tiny_model(out: Path, corpus: list[str]) -> Path:
    """A 1-layer, 32-dim BERT with a WordPiece vocabulary trained on `corpus`, saved as a sentence-transformer."""
    import torch
    from sentence_transformers import SentenceTransformer
    try:  # sentence-transformers >= 6 moved the module classes
        from sentence_transformers.sentence_transformer import modules as stm
    except ImportError:  # pragma: no cover - older releases
        from sentence_transformers import models as stm
    from tokenizers import (
        Tokenizer,
        models,
        normalizers,
        pre_tokenizers,
        processors,
        trainers,
    )
    from transformers import BertConfig, BertModel, BertTokenizerFast

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok.train_from_iterator(corpus, trainers.WordPieceTrainer(vocab_size=600, special_tokens=specials))
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))])
    fast = BertTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                             sep_token="[SEP]", mask_token="[MASK]")
    raw = out.parent / f"{out.name}-hf"
    torch.manual_seed(0)
    config = BertConfig(vocab_size=tok.get_vocab_size(), hidden_size=32, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=512)
    BertModel(config).save_pretrained(raw)
    fast.save_pretrained(raw)
    word = stm.Transformer(str(raw), max_seq_length=256)
    dim = word.get_embedding_dimension() if hasattr(word, "get_embedding_dimension") \
        else word.get_word_embedding_dimension()
    SentenceTransformer(modules=[word, stm.Pooling(dim, "mean")],
                        device="cpu").save(str(out))
    return out


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    pytest.importorskip("sentence_transformers")
    return build_tiny_model(tmp_path_factory.mktemp("st") / "tiny", [text(200, i) for i in range(50)])


@pytest.fixture
def encode_counter(monkeypatch):
    from sentence_transformers import SentenceTransformer

    calls = {"calls": 0, "texts": 0, "loads": 0}
    real_encode, real_init = SentenceTransformer.encode, SentenceTransformer.__init__

    def encode(self, sentences, *a, **kw):
        calls["calls"] += 1
        calls["texts"] += len(sentences)
        return real_encode(self, sentences, *a, **kw)

    def init(self, *a, **kw):
        calls["loads"] += 1
        real_init(self, *a, **kw)

    monkeypatch.setattr(SentenceTransformer, "encode", encode)
    monkeypatch.setattr(SentenceTransformer, "__init__", init)
    return calls


def _score(root: Path, rows, **kw):
    spec = load_spec(root, GATE)
    check_registered(spec)
    return spec, score_gate(spec, rows, cache_dir=root / "runs" / ".cache", **kw).to_json()  # the §6 JSON contract


def test_embedding_distance_is_centroid_cosine_and_cached(tmp_path, tiny_model, encode_counter):
    root = make_workspace(tmp_path / "ws", voice={"view": "embedding", "model": str(tiny_model)})
    rows = voice_rows({"base": unrelated("b"), "cand": unrelated("c"), "other": unrelated("o")})
    spec, first = _score(root, rows)
    held = (root / "corpora/held/held.txt").read_text()
    h_chunks = chunk_words(held, spec.expected_words)
    assert len(h_chunks) == 3000 // 120
    # every distinct text embedded exactly once
    assert encode_counter["texts"] == len(h_chunks) + len(rows) and encode_counter["loads"] == 1

    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(tiny_model), device="cpu")
    h = model.encode(h_chunks, normalize_embeddings=True)
    g = model.encode([r["text"] for r in rows if r["arm"] == "cand" and r["seed"] == SEEDS[0]],
                     normalize_embeddings=True)
    hc, gc = h.mean(0), g.mean(0)
    expected = 1 - float(hc @ gc / np.linalg.norm(hc) / np.linalg.norm(gc))
    assert arm(first, "cand")["distances"][str(SEEDS[0])] == pytest.approx(expected, abs=2e-6)
    sig = first["signature"]
    assert sig["view"] == "embedding" and sig["embedding_model"].startswith("local:sha256:")
    assert "emb:local:sha256:" in first["signature_text"]

    # re-scoring (a new process-level cache over the same directory) and amending embed nothing
    before = dict(encode_counter)
    _, again = _score(root, rows)
    _, amended = _score(root, rows, rule="global-max-spread")
    assert encode_counter == before
    assert result_json(again) == result_json(first)
    assert arm(amended, "cand")["distances"] == arm(first, "cand")["distances"]
    assert amended["rule"] == "global-max-spread"

    # one new generation text: exactly one text embedded
    rows[0] = {**rows[0], "text": text(150, "replacement")}
    _score(root, rows)
    assert encode_counter["texts"] == before["texts"] + 1


def test_without_the_embedding_extra_the_view_is_refused_in_one_line(tmp_path, monkeypatch):
    """sentence-transformers is an extra: a missing one is a clear refusal, at register already."""
    import sys

    from voicegate.spec._registration import register
    from voicegate.spec._spec import load_spec as load
    from voicegate.spec._spec import spec_path

    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # what an uninstalled package looks like
    from voicegate.scoring._embedding import MISSING, loader
    from voicegate.spec._views import VIEW_SPECS

    assert VIEW_SPECS["embedding"].unavailable() == MISSING
    with pytest.raises(VoicegateError, match=r"pip install 'voicegate\[embedding\]'") as refused:
        loader("m", None, str(tmp_path))(["a text"])
    assert str(refused.value) == MISSING and "\n" not in MISSING
    root = tmp_path / "ws"
    make_workspace(root)  # registered under the stylometric view
    path = spec_path(root, GATE)
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    path.write_text(path.read_text().replace("view: stylometric", f"view: embedding\n  model: {tmp_path / 'model'}"))
    with pytest.raises(VoicegateError, match="the embedding view needs sentence-transformers"):
        register(load(root, GATE), supersede=True)
