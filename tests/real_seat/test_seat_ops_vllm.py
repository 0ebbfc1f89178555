"""`voicegate seat ...` against a REAL vLLM seat (the integration fixture in tests/helpers/vllm_seat.py).

The seat serves ``voices-base`` and the voices in ``vllm_seat.SERVED`` (from --lora-modules). A compose file
that describes exactly that start is written here; then an adapter is tried at run time,
drift catches it, it is dropped, and the seat is back in step. The same seat's decode cost
is measured, and `check` asks the vLLM venv's own model registry about the classes.
"""

from __future__ import annotations

import json

import pytest
from helpers.vllm_seat import SERVED, SERVED_ADAPTER, venv_python
from helpers.workspace import run_cli

pytestmark = pytest.mark.vllm

TRY_NAME = "lv-tiny-drift"   # not the fixture's RUNTIME_ADAPTER name, so other tests can load theirs


def _compose(tmp_path, seat) -> str:
    p = tmp_path / "compose.yaml"
    p.write_text(
        "services:\n  voices:\n    command:\n"
        f"      - {seat.model_dir}\n      - --served-model-name\n      - voices-base\n"
        "      - --enable-lora\n      - --max-lora-rank\n      - \"16\"\n"
        "      - --kv-cache-memory-bytes\n      - 64M\n"
        "      - --lora-modules\n" + "".join(f"      - {n}={seat.adapters[n]}\n" for n in SERVED))
    return str(p)


def test_drift_try_drop_against_real_vllm(capsys, tmp_path, vllm_seat):
    compose = _compose(tmp_path, vllm_seat)
    url = vllm_seat.url
    code, out, _ = run_cli("seat", "models", "--seat", url, "--json")
    assert code == 0
    models = {m["id"]: m for m in json.loads(out)["models"]}
    assert models["voices-base"]["parent"] is None
    assert models[SERVED_ADAPTER] == {"id": SERVED_ADAPTER, "root": str(vllm_seat.adapters[SERVED_ADAPTER]),
                                      "parent": "voices-base", "voicegate": None}   # the fleet's: no lease

    code, out, err = run_cli("seat", "drift", "--seat", url, "--compose", compose, "--json")
    assert code == 0, out + err
    assert sorted(e["name"] for e in json.loads(out)["in_step"]) == sorted(SERVED)

    adapter_dir = str(vllm_seat.adapters["lv-austen"])   # a voice the seat does not serve
    code, out, err = run_cli("seat", "try", TRY_NAME, adapter_dir, "--seat", url, "--compose", compose, "--json")
    assert code == 0, err
    tried = json.loads(out)
    try:
        assert tried["served"] is True and tried["root"] == adapter_dir and tried["persisted"] is False
        assert tried["compose_line"] == f"      - {TRY_NAME}={adapter_dir}"
        assert 0 < tried["seconds"] < 5

        code, out, err = run_cli("seat", "drift", "--seat", url, "--compose", compose, "--json")
        assert code == 1
        d = json.loads(out)
        assert [e["name"] for e in d["served_not_persisted"]] == [TRY_NAME]
        assert d["persisted_not_served"] == [] and d["path_mismatch"] == []
        assert "1 served but not persisted" in err

        # Decode cost of the served adapter against the base, interleaved, on real LoRA kernels.
        code, out, err = run_cli("seat", "cost", SERVED_ADAPTER, "--n", "8", "--max-tokens", "32",
                                 "--seat", url, "--json")
        assert code == 0, err
        cost = json.loads(out)
        with capsys.disabled():
            print(f"\nreal vLLM cost: base {cost['base_tok_s']} tok/s, {SERVED_ADAPTER} {cost['voice_tok_s']} tok/s, "
                  f"overhead {cost['overhead_pct']}%, floor {cost['noise_floor_pct']}%")
        assert all(r["completion_tokens"] == 32 for r in cost["runs"])   # ignore_eos: the same length
        assert cost["warnings"] == []
        assert cost["base_tok_s"] > 0 and cost["voice_tok_s"] > 0
        assert cost["overhead_pct"] < 0          # LoRA adds work on every token
    finally:
        code, out, err = run_cli("seat", "drop", TRY_NAME, "--seat", url, "--compose", compose)
    assert code == 0, err
    assert "stays gone after a restart" in out
    code, out, _ = run_cli("seat", "drift", "--seat", url, "--compose", compose)
    assert code == 0 and f"in step: {len(SERVED)} adapter(s)" in out


def test_check_asks_the_vllm_venv_registry(tmp_path, vllm_seat):
    py = venv_python()
    code, out, err = run_cli("seat", "check", "--model", vllm_seat.model_dir,
                             "--adapter", vllm_seat.adapters[SERVED_ADAPTER], "--vllm-python", py,
                             "--compose", _compose(tmp_path, vllm_seat), "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["architectures"] == ["Qwen3ForCausalLM"] and data["status"] == "supported"
    assert data["support"][0]["source"].startswith("vllm 0.32")
    assert 0 < data["adapter_bytes"] < data["carrier_bytes"]
    assert data["kv"]["kv_cache_bytes"] == 64 * 2**20
    assert data["table"][0]["lora_bytes"] == data["carrier_bytes"] + 3 * data["adapter_bytes"]

    moe = tmp_path / "moe"
    moe.mkdir()
    (moe / "config.json").write_text(json.dumps({"architectures": ["Qwen3MoeForCausalLM"], "num_experts": 128}))
    code, out, _ = run_cli("seat", "check", "--model", moe, "--vllm-python", py, "--json")
    s = json.loads(out)["support"][0]
    # This vLLM's registry says yes; the seat's engine may not: still "check first".
    assert s["status"] == "check-first" and "get_expert_mapping" in s["note"]
