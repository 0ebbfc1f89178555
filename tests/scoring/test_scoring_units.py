"""The pure pieces, each against a hand computation."""

from __future__ import annotations

import math
import random
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from voicegate.scoring import (
    build_index,
    build_reference,
    check_probe,
    copy_stats,
    copying_verdict,
    cosine_delta,
    degeneration,
    doc_from_tokens,
    is_runaway,
    tokenize,
    word_counts,
)
from voicegate.scoring._bootstrap import paired_interval
from voicegate.scoring._copying import ngram_hashes, token_hashes
from voicegate.scoring._embedding import chunk_words
from voicegate.scoring._tokens import BLOCK_CHARS


def test_tokens_follow_design_6b():
    text = "Don’t O'er-the HILL, 42 times_x; 'tis ﬁne — Straße! café naïve ‘quoted’ rock'n'roll"
    assert tokenize(text) == ["don't", "o'er", "the", "hill", "times", "x", "tis", "fine", "strasse", "café",
                              "naïve", "quoted", "rock'n'roll"]
    assert tokenize("") == [] and tokenize("123 ... !!!") == []


def test_long_texts_are_matched_in_blocks_without_splitting_a_token():
    rng = random.Random(0)
    ws = ["".join(rng.choice("abcdefg") for _ in range(rng.randint(1, 12))) for _ in range(200_000)]
    text = " ".join(ws) + "\n" + "x" * 10
    assert len(text) > 4 * BLOCK_CHARS
    assert tokenize(text) == ws + ["x" * 10]


def test_the_tokenizer_is_the_regex_and_the_signature_says_so():
    """Tokens are `re.findall(PATTERN)` after normalising, nltk is neither imported nor a
    dependency, and the signature's name is what runs (no "nltk" in it)."""
    import ast
    import tomllib

    from voicegate.scoring import _tokens
    from voicegate.scoring._tokens import PATTERN, TOKENIZER_NAME, normalize

    assert TOKENIZER_NAME == "re:nfkc-casefold-letters-apostrophe@2"
    imported = {(n.module if isinstance(n, ast.ImportFrom) else a.name).split(".")[0]
                for n in ast.walk(ast.parse(Path(_tokens.__file__).read_text(encoding="utf-8")))
                if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    assert imported == {"__future__", "re", "unicodedata", "collections"}
    deps = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"]
    assert not [d for d in deps["dependencies"] if d.startswith("nltk")]
    text = "Don’t O'er-the HILL, 42 times_x; 'tis ﬁne — Straße! x\u0301y rock'n'roll"
    assert tokenize(text) == re.findall(PATTERN, normalize(text)) == [
        "don't", "o'er", "the", "hill", "times", "x", "tis", "fine", "strasse", "x", "y", "rock'n'roll"]


def test_tokens_are_nltks_regexp_tokenizers_on_the_novels_and_differ_only_on_combining_marks(corpus_dir):
    """The cross-check with nltk (installed with the test extra, imported as itself): its RegexpTokenizer over
    PATTERN gives the same tokens on the novels; it matches with the `regex` engine, which counts a combining
    mark as a letter, so there (and only there) it is another definition."""
    regexp = pytest.importorskip("nltk.tokenize.regexp")
    from voicegate.scoring._tokens import PATTERN, _blocks, normalize

    tok = regexp.RegexpTokenizer(PATTERN)
    for path in sorted(corpus_dir.glob("*.txt"))[:2]:
        text = path.read_text(encoding="utf-8")[:400_000]
        assert tokenize(text) == [t for block in _blocks(normalize(text)) for t in tok.tokenize(block)]
    assert tokenize("ÆTHER ǅungla x\u0301y") == ["æther", "džungla", "x", "y"]
    assert tok.tokenize(normalize("ÆTHER ǅungla x\u0301y")) == ["æther", "džungla", "x\u0301y"]


def _manual_reference(docs: list[list[str]], mfw: int, chunk: int):
    totals: dict[str, int] = {}
    for d in docs:
        for w in d:
            totals[w] = totals.get(w, 0) + 1
    words = [w for w, _ in sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))][:mfw]
    rows = []
    for d in docs:
        pieces = [d[i:i + chunk] for i in range(0, len(d) - chunk + 1, chunk)] if len(d) >= chunk else [d]
        for p in pieces:
            rows.append([p.count(w) / len(p) for w in words])
    mean = [sum(r[j] for r in rows) / len(rows) for j in range(len(words))]
    sd = [math.sqrt(sum((r[j] - mean[j]) ** 2 for r in rows) / (len(rows) - 1)) for j in range(len(words))]
    return words, mean, sd


def test_reference_and_cosine_delta_match_a_hand_computation():
    rng = random.Random(1)
    vocab = [f"w{i}" for i in range(40)]
    held = [rng.choice(vocab[:30]) for _ in range(530)]
    bg = [[rng.choice(vocab[10:]) for _ in range(n)] for n in (700, 90)]  # 90 < chunk: one short chunk
    ref = build_reference([doc_from_tokens(held)], [doc_from_tokens(b) for b in bg], mfw=25, chunk=100)
    words, mean, sd = _manual_reference([held, *bg], 25, 100)
    assert list(ref.words) == words and ref.chunks == 5 + 7 + 1
    np.testing.assert_allclose(ref.mean, mean, rtol=1e-12)
    np.testing.assert_allclose(ref.sd, sd, rtol=1e-12)

    gen = [rng.choice(vocab) for _ in range(300)]
    z = lambda toks: [((toks.count(w) / len(toks)) - m) / s if s else 0.0
                      for w, m, s in zip(words, mean, sd, strict=True)]
    a, b = z(gen), z(held)
    cos = sum(x * y for x, y in zip(a, b, strict=True)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))
    got = cosine_delta(ref, word_counts(ref.index(), doc_from_tokens(gen)), len(gen))
    assert got == pytest.approx(1 - cos, abs=1e-12)


def test_reference_refuses_without_background():
    from voicegate import VoicegateError

    with pytest.raises(VoicegateError, match="background"):
        build_reference([doc_from_tokens(["a"] * 10)], [], mfw=5, chunk=5)


def test_ngram_index_lookup_runs_and_sources():
    f1 = doc_from_tokens([f"a{i}" for i in range(30)])
    f2 = doc_from_tokens([f"b{i}" for i in range(30)])
    idx = build_index([f1, f2], 4)
    assert idx.hashes.shape == (27 + 27,) and list(idx.starts) == [0, 30, 60]
    # same 4-gram in a different vocabulary order hashes the same
    g = doc_from_tokens(["zz", "b3", "b4", "b5", "b6", "b7", "zz", "a28", "a29", "b0", "b1"])
    assert ngram_hashes(token_hashes(g), 4)[1] == ngram_hashes(token_hashes(f2), 4)[3]
    stats = copy_stats(idx, [token_hashes(g)])
    # b3..b7 is a 5-token run (2 4-grams); a28 a29 b0 b1 crosses the file boundary: no hit
    assert stats.ngrams == 8 and stats.hits == 2 and stats.longest_run == 5
    run = stats.runs[0]
    assert (run.start, run.length) == (1, 5) and idx.source(run.source_offset) == (1, 3)
    assert copying_verdict(0.0051, 0.0, 10, tolerance=0.005, max_run=50) == "COPIED"
    assert copying_verdict(0.005, 0.0, 49, tolerance=0.005, max_run=50) == "NOT-COPIED"
    assert copying_verdict(0.0, 0.0, 50, tolerance=0.005, max_run=50) == "COPIED"


def test_runaway_repetition_definition():
    prose = tokenize("It was a bright cold day in April and the clocks were striking thirteen " * 1)
    assert not is_runaway(prose)
    assert is_runaway(tokenize("no " * 8)) and not is_runaway(tokenize("no " * 7))  # too short to judge
    fresh = [f"w{i}" for i in range(300)]
    late_loop = fresh + tokenize("and so it went on " * 20)  # 400 tokens, loop of period 5 in the last 100
    assert is_runaway(late_loop) and not is_runaway(fresh)
    period_60 = [f"v{i % 60}" for i in range(240)]  # loop longer than half the window: distinct 4-grams 60/97
    assert not is_runaway(period_60[-100:]) and is_runaway(period_60)
    rates = degeneration([([], "stop"), (tokenize("la " * 40), "length"), (fresh, "length"), (fresh, "stop")])
    assert rates == {"rate": 0.5, "empty": 0.25, "repetition": 0.25, "truncated": 0.5, "rows": 4}
    assert degeneration([(fresh, "length")], truncation_decides=True)["rate"] == 1.0


def test_distinct_share_counts_every_window():
    from voicegate.scoring._damage import REPEAT_N, _distinct_share

    rng = random.Random(5)
    for n in [*range(12), 100, 301]:
        for vocab in (1, 2, 7, 1000):
            tokens = [rng.randrange(vocab) for _ in range(n)]
            windows = [tuple(tokens[i:i + REPEAT_N]) for i in range(n - REPEAT_N + 1)]
            assert _distinct_share(tokens) == (len(set(windows)) / len(windows) if windows else 1.0)
    assert _distinct_share(["a", "b", "a", "b", "a", "b"]) == 2 / 3


def test_real_prose_is_not_degenerate(corpus_dir):
    toks = tokenize((corpus_dir / "Austen_Emma.txt").read_text(encoding="utf-8"))
    rng = random.Random(3)
    flagged = sum(is_runaway(toks[s:s + 250]) for s in (rng.randrange(len(toks) - 250) for _ in range(2000)))
    assert flagged == 0


@pytest.mark.parametrize("check,reply,ok", [
    ({"exact": "4"}, " 4. ", True), ({"exact": "4"}, "It is 4", False),
    ({"exact": ["Paris", "paris, france"]}, "Paris, France!", True),
    ({"regex": r"\b\d{4}\b"}, "In 1847.", True), ({"regex": r"^\d+$"}, "about 3", False),
    ({"refuse": True}, "I’m sorry, but I can’t help with that.", True), ({"refuse": True}, "Sure, here goes", False),
    ({"refuse": False}, "Sure, here goes", True),
    ({"max_words": 3}, "Yes, of course.", True), ({"max_words": 3}, "Yes, of course, gladly.", False),
    ({"max_words": 3}, "...", False),
    ({"json": True}, '{"a": [1, 2]}', True), ({"json": True}, "{a: 1}", False),
    ({"json": ["a", "b"]}, '```json\n{"a": 1}\n```', False),
    ({"json": ["a"]}, 'Here:\n```json\n{"a": 1}\n```', True),
])
def test_probe_checks(check, reply, ok):
    assert check_probe(check, reply) is ok


def test_chunk_words():
    assert chunk_words("a b c d e f g", 3) == ["a b c", "d e f"]
    assert chunk_words("a b", 3) == ["a b"] and chunk_words("  ", 3) == []


def test_bootstrap_is_seeded_and_brackets_a_clear_difference():
    rng = np.random.default_rng(0)
    base = {s: rng.normal(1.0, 0.05, 30) for s in (1, 2)}
    cand = {s: rng.normal(0.6, 0.05, 30) for s in (1, 2)}
    # d(arm, seed) of a resampled pool: the weighted mean of per-prompt values
    pool = lambda v: (lambda w: (w @ v) / w.sum(axis=1))
    a = paired_interval({s: pool(v) for s, v in base.items()}, {s: pool(v) for s, v in cand.items()}, 30)
    b = paired_interval({s: pool(v) for s, v in base.items()}, {s: pool(v) for s, v in cand.items()}, 30)
    assert a == b and a["deciding"] is False
    point = np.mean([v.mean() for v in base.values()]) - np.mean([v.mean() for v in cand.values()])
    assert a["low"] < point < a["high"] and a["high"] - a["low"] < 0.1
    assert paired_interval({1: pool(np.ones(1))}, {1: pool(np.ones(1))}, 1) is None


def test_bootstrap_replicates_are_scipys_and_the_interval_is_the_hand_drawn_one_bit_for_bit(monkeypatch):
    """The replicates are, float for float, those scipy.stats.bootstrap computes (percentile method, numpy's
    generator seeded with BOOTSTRAP_SEED, the prompt indices as the sample), and the interval is the one the
    hand-written draw gave before (rng.integers(0, P, (B, P)) -> prompt multiplicities -> delta_cb, recentred
    percentiles): no recorded interval moves, and a score never imports scipy.stats for it."""
    import scipy.stats

    from voicegate.scoring._bootstrap import BOOTSTRAP_SEED, weights

    rng = np.random.default_rng(11)

    def pool(v):  # d(arm, seed) of a resampled pool, made non-linear so the order of operations shows
        return lambda m: (m @ v) / m.sum(axis=1) + np.sin(m @ v)

    for n, seeds in ((2, 1), (7, 3), (30, 2), (61, 4)):
        vals = {arm: {s: rng.random(n) for s in range(seeds)} for arm in ("base", "cand")}
        base = {s: pool(v) for s, v in vals["base"].items()}
        cand = {s: pool(v) for s, v in vals["cand"].items()}
        drawn: list[np.ndarray] = []  # the replicates, as the interval's percentiles are taken of them
        with monkeypatch.context() as m:
            m.setattr(np, "quantile", lambda values, qs, drawn=drawn, real=np.quantile:
                      drawn.append(np.array(values)) or real(values, qs))
            got = paired_interval(base, cand, n)

        def delta_cb(idx, axis=-1, n=n, base=base, cand=cand):
            w = weights(idx, n)
            return np.mean([f(w) for f in base.values()], axis=0) - np.mean([f(w) for f in cand.values()], axis=0)

        scipys = scipy.stats.bootstrap((np.arange(n),), delta_cb, n_resamples=1000, vectorized=True,
                                       confidence_level=0.95, method="percentile",
                                       rng=np.random.default_rng(BOOTSTRAP_SEED)).bootstrap_distribution
        assert len(drawn) == 1 and drawn[0].tobytes() == np.asarray(scipys, dtype=float).tobytes(), n
        # the interval as it was computed before scipy drew the resamples
        w = weights(np.random.default_rng(BOOTSTRAP_SEED).integers(0, n, size=(1000, n)), n)
        reps = np.mean([f(w) for f in base.values()], axis=0) - np.mean([f(w) for f in cand.values()], axis=0)
        full = np.ones((1, n))
        estimate = float(np.mean([f(full) for f in base.values()]) - np.mean([f(full) for f in cand.values()]))
        bias = float(reps.mean()) - estimate
        alpha = (1 - 0.95) / 2  # 0.025000000000000022, as the code has always computed it
        low, high = (q - bias for q in np.quantile(reps, [alpha, 1 - alpha]).tolist())
        assert (got["low"], got["high"], got["bias"]) == (low, high, bias), n


def test_signature_reads_versions_without_importing_them():
    from importlib.metadata import version

    from voicegate.scoring._signature import installed_version

    for name in ("scipy", "numpy", "jinja2"):
        assert installed_version(name) == version(name)
    assert installed_version("voicegate-no-such-distribution") is None
    code = ("import sys; from voicegate.scoring._signature import installed_version; v = installed_version('scipy'); "
            "print(v, 'scipy' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True)
    assert done.stdout.split() == [version("scipy"), "False"], done.stderr


def test_pooled_delta_equals_cosine_delta_for_any_weighting():
    from voicegate.scoring._stylometric import pooled_delta

    rng = random.Random(5)
    vocab = [f"w{i}" for i in range(60)]
    held = doc_from_tokens([rng.choice(vocab[:40]) for _ in range(2000)])
    bg = [doc_from_tokens([rng.choice(vocab[15:]) for _ in range(2000)]) for _ in range(2)]
    ref = build_reference([held], bg, mfw=50, chunk=200)
    gens = [doc_from_tokens([rng.choice(vocab) for _ in range(rng.randint(20, 80))]) for _ in range(12)]
    counts = np.vstack([word_counts(ref.index(), g) for g in gens])
    totals = np.asarray([len(g) for g in gens], dtype=float)
    w = np.random.default_rng(0).integers(0, 3, size=(25, 12)).astype(float)
    w[0] = 1.0
    fast = pooled_delta(ref, counts, totals)(w)
    slow = [cosine_delta(ref, wi @ counts, wi @ totals) for wi in w]
    np.testing.assert_allclose(fast, slow, atol=1e-10)
