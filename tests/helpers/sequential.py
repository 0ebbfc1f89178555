"""A constructed gate under a registered sequential design (looks at 3 and 5 of seeds 1-5): `cand` is a voice
that a look at 3 seeds cannot decide and 5 seeds pass, `other` a voiceless one stopped for futility."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from helpers.workspace import GATE, carrier_like, constructed_spec, scoring_workspace, words

COMPOSE = """services:
  vllm:
    command:
      - --lora-modules
      - lv-test=/adapters/lv-test
"""


def _mixed(tag: str, k: int) -> Any:  # a background author's style with k of 160 words in the gate author's
    return lambda seed, p: " ".join(words(160 - k, f"{tag}/{seed}/{p}", 1) + words(k, f"{tag}x/{seed}/{p}", 0))


TEXTS = {"base": carrier_like("b"), "cand": _mixed("c", 40), "other": carrier_like("o")}


def look_rows(seeds: list[int], texts: dict[str, Any] | None = None) -> list[dict]:
    """Every arm's rows of `seeds`, six prompts a seed (`texts`: arm -> callable(seed, prompt), else `TEXTS`)."""
    return [{"kind": "voice", "arm": name, "model": name, "seed": s, "prompt_id": str(p), "text": make(s, p),
             "finish_reason": "stop"} for name, make in (texts or TEXTS).items() for s in seeds for p in range(6)]


def sequential_workspace(root: Path, rule: str = "welch-t-min-effect", artifacts: bool = False,
                         looks: list[int] | None = None, seeds: int = 5, a_vs_a: bool = False) -> Path:
    """Registered with `floor.looks` `looks` (default [3, 5]) under `rule`, seeds 1..`seeds`; `artifacts`: a README
    and a compose file beside the record; `a_vs_a`: an A-vs-A arm "aa" (the base's model under fresh seeds).
    `looks=[]`: no looks, a fixed-design pilot of `seeds` seeds."""
    design = {} if looks == [] else {"looks": looks or [3, 5]}
    extra: dict[str, Any] = {"floor": {"rule": rule, **design}, "seeds": list(range(1, seeds + 1))}
    if a_vs_a:
        spec = constructed_spec(extra=extra)
        extra["arms"] = [*spec["arms"], {"name": "aa", "model": "base", "role": "a-vs-a"}]
    if artifacts:
        (root / "deploy").mkdir(parents=True, exist_ok=True)
        (root / "deploy" / "compose.yaml").write_text(COMPOSE, encoding="utf-8")
        extra["artifacts"] = {"record": f"gates/{GATE}.md", "readme": f"adapters/{GATE}/README.md",
                              "compose": "deploy/compose.yaml"}
    return scoring_workspace(root, extra=extra)
