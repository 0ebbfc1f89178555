"""`voicegate score` end to end, through the real CLI in a subprocess."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from helpers.bronte import fixed_view
from helpers.workspace import (
    GATE,
    author_like,
    carrier_like,
    copier,
    rules_of_gate,
    run_cli,
    voice_rows,
    voicegate,
    write_rows,
)
from helpers.workspace import scoring_workspace as make_workspace
from helpers.workspace import vg_in as in_process
from helpers.workspace import warm_workspace as _warm_workspace


@pytest.fixture
def ws(tmp_path) -> Path:
    root = make_workspace(tmp_path / "ws")
    write_rows(root, voice_rows({"base": carrier_like("b"), "cand": author_like("c"), "other": copier}))
    return root


T_RULES = ("global-max-spread", "pairwise-max-spread", "welch-t", "welch-t-min-effect")  # what these tests are about


def test_score_prints_every_floor_saves_scores_and_appends(ws):
    # four rules and two detectable columns: one row per arm takes about 205 columns
    done = voicegate(ws, "score", GATE, "-C", str(ws), env={"COLUMNS": "240"})
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "floor" in out and "global *" not in out and "pairwise *" in out  # deciding rule marked
    assert "global = global-max-spread" in out and "pairwise = pairwise-max-spread" in out
    assert "DISAGREE" in out and "COPYING" in out and "DAMAGE" in out
    assert "ships: cand (VOICE PASS" in out and "signature: view:stylometric|mfw:100|" in out
    cand_row = next(line for line in out.splitlines() if line.startswith("│ cand "))
    other_row = next(line for line in out.splitlines() if line.startswith("│ other ") and "COPIED" in line)
    assert "120" in other_row  # longest run, in tokens
    saved = (ws / "runs" / GATE / "scores.json").read_text()
    result = json.loads(saved)
    assert result["ships"] == "cand" and result["rule"] == "pairwise-max-spread"
    for a in result["arms"]:
        assert {"name", "role", "distances", "spread"} <= set(a)
        if a["role"] == "candidate":
            assert {"delta_cb", "floors", "voice", "disagree", "ratio", "overlap", "copying", "damage"} <= set(a)
            # registered today: every rule in force, each computed
            assert set(a["floors"]) == set(rules_of_gate(ws, GATE))
    # global and pairwise PASS; two seeds leave the t rules about one degree of freedom (t(0.99) ≈ 31.8): FAIL,
    # with the detectable delta beside each saying how far out of reach a pass was; one verdict a rule in the row
    voice = next(a for a in result["arms"] if a["name"] == "cand")["voice"]
    assert {rid: voice[rid] for rid in T_RULES} == {"global-max-spread": "PASS", "pairwise-max-spread": "PASS",
                                                     "welch-t": "FAIL", "welch-t-min-effect": "FAIL"}
    verdicts = list(voice.values())
    assert (cand_row.count("PASS"), cand_row.count("FAIL")) == (verdicts.count("PASS"), verdicts.count("FAIL"))
    assert "x)" in cand_row
    # the artifacts were handed the result (their own helper decides what to write)
    assert (ws / "gates" / f"{GATE}.md").exists()

    # --json prints the saved result at full precision; scoring again gives the same bytes, saves the same
    again = in_process(ws, "score", GATE, "--json")
    assert again.returncode == 0, again.stderr
    assert saved == (ws / "runs" / GATE / "scores.json").read_text()
    _assert_rounds_to(_registered(json.loads(again.stdout)), result)
    assert in_process(ws, "score", GATE, "--json").stdout == again.stdout


def _registered(document):
    """`score --json`'s document less the state-in-force keys, which scores.json (the registered result) lacks;
    with no amendment in force they only restate it."""
    doc = dict(document)
    doc.pop("error_rates", None)  # the statement beside the decision in force (a gate registered since 2026-12-07)
    state = (doc.pop("registered_rule"), doc.pop("registered_ships"), doc.pop("amendment"))
    assert state == (doc["rule"], doc["ships"], None)
    return doc


def _assert_rounds_to(full, recorded, where="result"):
    """`full` is `recorded` with its numbers unrounded: same keys, verdicts and strings; floats round to it."""
    if isinstance(full, float):
        assert isinstance(recorded, float) and round(full, 6) + 0.0 == recorded, (where, full, recorded)
    elif isinstance(full, dict):
        assert list(full) == list(recorded), where
        for k in full:
            _assert_rounds_to(full[k], recorded[k], f"{where}.{k}")
    elif isinstance(full, list):
        assert len(full) == len(recorded), where
        for i, (a, b) in enumerate(zip(full, recorded, strict=True)):
            _assert_rounds_to(a, b, f"{where}[{i}]")
    else:
        assert full == recorded, (where, full, recorded)


def _decimals(x: float) -> int:
    return len(repr(x).partition(".")[2]) if "e" not in repr(x) else 99


def test_json_numbers_are_at_full_precision_and_the_record_keeps_its_rounding(ws):
    """The table rounds, `--json` need not. The record, scores.json and the result sha256 stay rounded."""
    from voicegate._hashing import sha256_json
    from voicegate.run._store import read_generations
    from voicegate.scoring import build_reference, cosine_delta, doc_from_text, tokenize, word_counts
    from voicegate.scoring._docs import doc_from_tokens

    printed = in_process(ws, "score", GATE, "--json")
    assert printed.returncode == 0, printed.stderr
    full = _registered(json.loads(printed.stdout))
    recorded = json.loads((ws / "runs" / GATE / "scores.json").read_text())
    _assert_rounds_to(full, recorded)  # same verdicts and pick, every number rounds to the recorded one
    cand = next(a for a in full["arms"] if a["name"] == "cand")
    base = next(a for a in full["arms"] if a["name"] == "base")
    assert _decimals(cand["delta_cb"]) > 6 and _decimals(cand["ratio"]) > 6
    assert max(_decimals(d) for d in cand["distances"].values()) > 6
    # ... and each is the unrounded computation itself:
    mean = lambda ds: sum(ds.values()) / len(ds)
    assert cand["delta_cb"] == mean(base["distances"]) - mean(cand["distances"])
    rule = full["rule"]
    assert cand["ratios"][rule] == cand["ratio"] == cand["delta_cb"] / cand["floors"][rule]
    read = lambda rel: doc_from_text((ws / rel).read_text(encoding="utf-8"))
    ref = build_reference([read("corpora/held/held.txt")], [read("corpora/bg/bg1.txt"), read("corpora/bg/bg2.txt")],
                          mfw=100, chunk=500)
    rows = read_generations(ws / "runs" / GATE / "generations.jsonl")
    for seed, d in cand["distances"].items():
        tokens = [t for r in sorted((r for r in rows if r["arm"] == "cand" and str(r["seed"]) == seed),
                                    key=lambda r: int(r["prompt_id"])) for t in tokenize(r["text"])]
        pooled = doc_from_tokens(tokens)
        assert d == cosine_delta(ref, word_counts(ref.index(), pooled), float(len(tokens))), seed
        assert recorded_distance(recorded, "cand", seed) == round(d, 6) != d
    # the record keeps its rounded numbers: its result sha256 is the rounded result's
    record = (ws / "gates" / f"{GATE}.md").read_text()
    assert f"Result sha256: `{sha256_json(recorded)}`" in record
    assert sha256_json(full) not in record
    assert f"{round(cand['delta_cb'], 3):+.3f}" in record and repr(cand["delta_cb"]) not in record


def recorded_distance(result: dict, arm: str, seed: str) -> float:
    return next(a for a in result["arms"] if a["name"] == arm)["distances"][seed]


def test_dry_run_writes_no_verdict_only_the_anchor_of_the_numbers_it_shows(ws):
    """A dry run records no verdict and no scores: it anchors the numbers it shows in the record (one entry, and the
    ledger line that lists it); the content-addressed cache is derived data and may fill."""
    def files() -> list[str]:
        return sorted(p.relative_to(ws).as_posix() for p in ws.rglob("*")
                      if ".git/" not in p.as_posix() and "runs/.cache" not in p.as_posix())

    before = files()
    done = in_process(ws, "score", GATE, "--dry-run", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["ships"] == "cand"
    assert f"gates/{GATE}.md: appended entry 1 (numbers first shown)" in done.stderr
    assert sorted(set(files()) - set(before)) == [f"gates/{GATE}.md", f"runs/{GATE}/entries.jsonl"]
    record = (ws / "gates" / f"{GATE}.md").read_text()
    assert record.count("<!-- voicegate:entry ") == 1 and "## Numbers first shown — " in record
    assert "## Score" not in record and not (ws / "runs" / GATE / "scores.json").exists()
    again = in_process(ws, "score", GATE, "--dry-run", "--json")
    assert again.stdout == done.stdout and (ws / "gates" / f"{GATE}.md").read_text() == record


def test_strict_exits_1_only_when_nothing_ships(tmp_path, ws):
    assert in_process(ws, "score", GATE, "--strict", "--quiet").returncode == 0
    root = make_workspace(tmp_path / "ws2")
    write_rows(root, voice_rows({"base": carrier_like("b"), "cand": carrier_like("c"), "other": copier}))
    done = in_process(root, "score", GATE, "--strict", "--quiet")
    assert done.returncode == 1
    assert done.stdout.strip() == f"{GATE}: ships: none (no candidate passes VOICE, COPYING and DAMAGE under " \
                                  "pairwise-max-spread); error rates: false pass not stated (a range floor), " \
                                  "power unknown"
    assert done.stderr.strip().splitlines() == [
        "voicegate: warning: smallest (arm, seed) pool has 720 words; Cosine Delta needs ~10,000 to be reliable",
        ("voicegate: warning: the ruler could not be checked at a pool's length (the training text gives 1 pool(s) "
         "of 10,000 words, the background 2; 3 needed a side): VOICE is decided without that check"),
        # the copier's two seeds give the same passage three words apart: they are not replicates
        ("voicegate: warning: other: its seeds gave near-identical pools (97% of each generation's word 8-grams "
        "repeat the same prompt's generation under the previous seed; independent samples share almost none): "
        "the seeds are not replicates (temperature 0, or a seat that ignores the request seed), so its spread "
        "measures no noise and no floor built on it can be trusted; a floor of 0 never passes"),
        f"voicegate: {GATE}: no candidate ships under pairwise-max-spread"]
    assert (root / "runs" / GATE / "scores.json").exists()  # a FAIL is a result: it is saved


def test_refusals_exit_2_with_one_line_and_write_nothing(tmp_path):
    root = make_workspace(tmp_path / "ws")
    done = in_process(root, "score", GATE)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("voicegate: no generations for lv-test") and done.stderr.count("\n") == 1
    assert not (root / "runs" / GATE / "scores.json").exists()

    done = in_process(root, "score", "lv-nope")
    assert done.returncode == 2 and "no such spec" in done.stderr and "Traceback" not in done.stderr

    write_rows(root, voice_rows({"base": carrier_like("b"), "cand": author_like("c"), "other": copier}))
    (root / "corpora" / "bg" / "bg2.txt").write_text("changed after registration", encoding="utf-8")
    done = in_process(root, "score", GATE)
    assert done.returncode == 2 and "registered file changed since registration: corpora/bg/bg2.txt" in done.stderr
    assert not (root / "runs" / GATE / "scores.json").exists()


def test_unknown_arm_in_generations_is_refused(tmp_path):
    root = make_workspace(tmp_path / "ws")
    rows = voice_rows({"base": carrier_like("b"), "cand": author_like("c"), "other": copier})
    write_rows(root, rows + [{**rows[0], "arm": "ghost"}])
    done = in_process(root, "score", GATE)
    assert done.returncode == 2 and "arm 'ghost' is not an arm of lv-test" in done.stderr
    assert not (root / "runs" / GATE / "scores.json").exists()


def test_reference_case_through_the_cli_shows_both_floors(ws, monkeypatch):
    """Acceptance 1 end to end: the per-(arm, seed) distances are the lv-bronte ones (two seeds here),
    injected at the view seam; everything after them — floors, verdicts, DISAGREE, table, JSON — is the CLI's."""
    import voicegate.scoring._score as S

    dist = {"base": {101: 0.80, 202: 0.86},            # spread 0.060, mean 0.830
            "cand": {101: 0.5915, 202: 0.6825},         # spread 0.091, delta_cb +0.193
            "other": {101: 0.4945, 202: 0.7455}}        # spread 0.251, delta_cb +0.210
    monkeypatch.setattr(S, "view_of", fixed_view(dist))
    monkeypatch.setattr(S, "paired_interval", lambda *a, **k: None)
    monkeypatch.delenv("VOICEGATE_DATA_DIR", raising=False)

    code, out, err = run_cli("score", GATE, "-C", str(ws), "--dry-run", env={"COLUMNS": "240"})
    assert code == 0, err
    cand = next(line for line in out.splitlines() if line.startswith("│ cand "))
    other = next(line for line in out.splitlines() if line.startswith("│ other ") and "+0.210" in line)
    assert "+0.193" in cand and "0.251 (0.8x)" in cand and "0.091 (2.1x)" in cand and "DISAGREE" in cand
    assert cand.index("FAIL") < cand.index("PASS")  # global column first: FAIL; pairwise: PASS
    # other's texts are the copier's, the same recitation under every seed: its seeds are not replicates, so its
    # floors are shown without a ratio (a ratio to a floor built on no noise would read as a measurement)
    assert "0.251 (n/a)" in other and "DISAGREE" not in other

    code, out, err = run_cli("score", GATE, "-C", str(ws), "--dry-run", "--json")
    data = json.loads(out)
    c = next(a for a in data["arms"] if a["name"] == "cand")
    o = next(a for a in data["arms"] if a["name"] == "other")
    # --json is at full precision: the reference numbers up to float noise, exactly once rounded as recorded
    seeds_rules = ("global-max-spread", "pairwise-max-spread")
    r6 = lambda m: {k: round(m[k], 6) for k in seeds_rules}  # another rule's floor may be None (infinite)
    assert r6(c["floors"]) == {"global-max-spread": 0.251, "pairwise-max-spread": 0.091}
    assert {rid: c["voice"][rid] for rid in T_RULES} == {"global-max-spread": "FAIL", "pairwise-max-spread": "PASS",
                                                         "welch-t": "FAIL", "welch-t-min-effect": "FAIL"}
    assert set(c["voice"]) == set(rules_of_gate(ws, GATE))
    assert c["disagree"] is True
    # welch-t from its definition, computed here: two seeds give Welch's df ≈ 1.7 and t(0.99) ≈ 8.6
    from scipy.stats import t as student

    va, vb = (0.6825 - 0.5915) ** 2 / 2 / 2, (0.86 - 0.80) ** 2 / 2 / 2
    df = (va + vb) ** 2 / (va ** 2 + vb ** 2)
    assert c["floors"]["welch-t"] == pytest.approx(student.ppf(0.99, df) * (va + vb) ** 0.5, abs=1e-9)
    # the smallest effect that matters on top: 0.2 (the default) base-seed SDs, the base's SD being 0.06 / √2
    assert c["floors"]["welch-t-min-effect"] == pytest.approx(c["floors"]["welch-t"] + 0.2 * 0.06 / 2 ** 0.5,
                                                              abs=1e-9)
    assert round(c["ratio"], 6) == 2.120879 and round(c["delta_cb"], 6) == 0.193
    assert abs(c["delta_cb"] - 0.193) < 1e-12 and abs(c["ratio"] - 0.193 / 0.091) < 1e-12
    assert r6(o["floors"]) == {"global-max-spread": 0.251, "pairwise-max-spread": 0.251}
    assert {rid: o["voice"][rid] for rid in T_RULES} == dict.fromkeys(T_RULES, "FAIL")
    assert other.count("FAIL") == list(o["voice"].values()).count("FAIL")  # one verdict a rule in the row
    # DISAGREE: the rules the gate computes gave different verdicts (none of these four differ for `other`)
    assert o["disagree"] is (len(set(o["voice"].values())) > 1) and ("DISAGREE" in other) is o["disagree"]
    # `other` copies the training text, so it could not ship anyway; cand passes all three axes
    assert data["ships"] == "cand" and o["copying"] == "COPIED"


def test_a_harness_warning_is_printed_and_recorded(tmp_path):
    root = make_workspace(tmp_path / "ws")
    base = carrier_like("b")
    write_rows(root, voice_rows({"base": base, "cand": lambda s, p: base(s, p) if p == 0 else author_like("c")(s, p),
                                 "other": carrier_like("o")}))
    done = in_process(root, "score", GATE)
    assert done.returncode == 0, done.stderr
    assert "cand: 2 voice generation(s) are byte-identical to the base's" in done.stdout + done.stderr
    record = (root / "gates" / f"{GATE}.md").read_text()
    assert "**Warnings (not deciding; read before relying on the numbers):**" in record
    assert "- cand: 2 voice generation(s) are byte-identical to the base's" in record


class _CacheSpy:
    """Every scoring Cache made in this process, and every entry it computed and stored."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        from voicegate.scoring import _cache

        self.caches: list[_cache.Cache] = []
        self.built: list[str] = []
        self.tokenized = 0
        real_init, real_save, real_doc = _cache.Cache.__init__, _cache.Cache._save, _cache.doc_from_text

        def init(cache, *args, **kwargs):
            real_init(cache, *args, **kwargs)
            self.caches.append(cache)

        def save(cache, name, **arrays):
            self.built.append(name)
            return real_save(cache, name, **arrays)

        def doc(text):
            self.tokenized += 1
            return real_doc(text)

        monkeypatch.setattr(_cache.Cache, "__init__", init)
        monkeypatch.setattr(_cache.Cache, "_save", save)
        monkeypatch.setattr(_cache, "doc_from_text", doc)

    @property
    def misses(self) -> int:
        return sum(c.misses for c in self.caches)

    def reset(self) -> None:
        self.caches.clear()
        self.built.clear()
        self.tokenized = 0


def _cached_kinds(root: Path) -> set[str]:
    return {p.name.split("-")[0] for p in (root / "runs" / ".cache").glob("*.npz")}


def test_register_warms_the_corpus_cache_so_the_first_score_builds_none_of_it(tmp_path, monkeypatch):
    """The first score after register was as slow as a naive scorer: nothing had filled the cache.

    `register` leaves every corpus-side entry (tokens of each corpus file, the reference, its ruler
    check, the n-gram index); the first score then reads them all and computes only the tokens of the
    generations: no corpus file is tokenized again.
    """
    root = _warm_workspace(tmp_path, "lv-warm")
    assert _cached_kinds(root) == {"tokens", "reference", "ruler", "pool", "ngrams"}
    corpus_files = len(list((root / "corpora").rglob("*.txt")))
    assert len(list((root / "runs" / ".cache").glob("tokens-*.npz"))) == corpus_files
    spy = _CacheSpy(monkeypatch)
    done = run_cli("score", "lv-warm", "--dry-run", cwd=root)
    assert done.code == 0, done.stderr
    assert spy.tokenized == 0  # not one corpus file read and tokenized again
    assert [n.split("-")[0] for n in spy.built] == ["gentokens"], spy.built
    assert spy.misses == 1  # the generations' tokens, nothing else
    assert sum(c.hits for c in spy.caches) >= 3  # the reference, its ruler check and the index were read


def test_dry_run_fills_the_cache_and_writes_no_artifact(tmp_path, monkeypatch):
    """The cache is derived data: `score --dry-run` on an empty cache fills it (so the real score that
    follows is fast) and writes no scores.json, record, README or compose entry."""
    import shutil

    from helpers.workspace import tree_snapshot

    root = _warm_workspace(tmp_path, "lv-dry")
    shutil.rmtree(root / "runs" / ".cache")
    before = {k: v for k, v in tree_snapshot(root).items() if not k.startswith("runs/.cache/")}
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True).stdout
    spy = _CacheSpy(monkeypatch)
    done = run_cli("score", "lv-dry", "--dry-run", "--json", cwd=root)
    assert done.code == 0, done.stderr
    assert spy.misses > 0 and spy.built  # it computed the corpus side, and stored it
    assert _cached_kinds(root) == {"tokens", "reference", "ruler", "pool", "ngrams", "gentokens"}
    after = {k: v for k, v in tree_snapshot(root).items() if not k.startswith("runs/.cache/")}
    anchored = {"gates/lv-dry.md", "runs/lv-dry/entries.jsonl"}  # the numbers shown, anchored: no verdict
    assert {k: v for k, v in after.items() if k not in anchored} == before
    assert set(after) - set(before) <= anchored and "## Score" not in (root / "gates" / "lv-dry.md").read_text()
    assert not (root / "runs" / "lv-dry" / "scores.json").exists()
    assert subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                          check=True).stdout == head
    spy.reset()
    again = run_cli("score", "lv-dry", "--dry-run", "--json", cwd=root)
    assert again.code == 0, again.stderr
    assert spy.misses == 0 and spy.built == [] and spy.tokenized == 0  # the dry run's cache is the one used
    assert again.stdout == done.stdout


def test_ruler_check_and_pool_sizes_in_json_record_table_and_report(ws):
    done = in_process(ws, "score", GATE)
    assert done.returncode == 0, done.stderr
    assert "ruler (stylometric, corpora only): held-out vs background AUC" in done.stdout
    assert "words per (arm, seed) pool" in done.stdout
    data = json.loads(in_process(ws, "score", GATE, "--json", "--dry-run").stdout)
    ruler = data["ruler"]["stylometric"]          # a key per view
    assert set(ruler) >= {"method", "heldout_auc", "author_auc", "threshold", "ok", "background_chunks"}
    assert ruler["threshold"] == 0.8
    for arm in data["arms"]:
        assert set(arm["pool_words"]) == {str(s) for s in arm["distances"]}
        assert all(w > 0 for w in arm["pool_words"].values())
    record = (ws / "gates" / f"{GATE}.md").read_text()
    assert "**Ruler (stylometric, from the registered corpora alone).**" in record
    assert " words)" in record
    assert in_process(ws, "report", GATE).returncode == 0
    page = next((ws / "runs" / GATE).glob("*.html")).read_text()
    assert 'id="ruler-stylometric"' in page and "Words per (arm, seed) pool" in page
