"""The demo's workspace: a spec, its prompts, corpora and probes, a compose file and an adapter README."""

from __future__ import annotations

import subprocess
from pathlib import Path

from voicegate.demo._texts import (
    BACKGROUND,
    MARLOWE_HELDOUT,
    MARLOWE_TRAINING,
    PROBES_YAML,
    PROMPTS,
)

GATE = "lv-marlowe"

SPEC = f"""\
# The demo gate: a synthetic author, Ada Marlowe, and four checkpoints of her voice adapter.
# Registered under the rule that was in force first; the demo then amends to the pairwise rule.
gate: {GATE}
author: Ada Marlowe (synthetic)
seat:
  url: http://127.0.0.1:8027/v1      # the demo passes --seat with its embedded stand-in's URL
  base_model: voices-base
  concurrency: 8
arms:
  - {{name: base, model: voices-base, role: base}}
  - {{name: ckpt475, model: lv-marlowe-ckpt475, role: candidate}}          # served by the seat
  - {{name: ckpt925, model: lv-marlowe-ckpt925, role: candidate,
     adapter_path: /adapters/lv-marlowe-v1/ckpt925}}                      # loaded for the run
  - {{name: ckpt1400, model: lv-marlowe-ckpt1400, role: candidate,
     adapter_path: /adapters/lv-marlowe-v1/ckpt1400}}
  - {{name: ckpt1850, model: lv-marlowe-ckpt1850, role: candidate,
     adapter_path: /adapters/lv-marlowe-v1/ckpt1850}}
prompts: demo/prompts/marlowe-beats.txt
seeds: [101, 202, 303]
sampling: {{temperature: 0.8, top_p: 0.95, max_tokens: 700}}
expected_words: 500
corpora:
  heldout: [demo/corpora/marlowe/heldout.txt]
  training: [demo/corpora/marlowe/train.txt]
  background: [demo/corpora/background/*.txt]
voice: {{view: stylometric, mfw: 100, chunk: 100}}
# A Markov voice trained on ~330 words reuses some 8-grams by chance (~1%): tolerance 0.02.
copying: {{n: 8, tolerance: 0.02, max_run: 50}}
damage: {{probes: demo/probes/general.yaml, tolerance: 0.05}}
floor: {{rule: global-max-spread}}
artifacts:
  record: gates/{GATE}.md
  readme: demo/adapters/lv-marlowe-v1/README.md
  compose: demo/deploy/compose.yaml
"""

COMPOSE = """\
# demo-seat: one base carrier and the author voices as LoRA adapters.
name: demo-seat
services:
  vllm-voices:
    image: vllm/vllm-openai:latest
    command:
      - /model
      - --served-model-name
      - voices-base
      - --enable-lora
      - --max-lora-rank
      - "32"
      - --lora-modules
      - lv-quill=/adapters/lv-quill-v1
      # lv-marlowe: the Ada Marlowe voice (demo).
      - lv-marlowe=/adapters/lv-marlowe-v1
"""

ADAPTER_README = """\
# lv-marlowe-v1

LoRA adapter for the (synthetic) voice of Ada Marlowe on the voices-base carrier.
Checkpoints: ckpt475, ckpt925, ckpt1400, ckpt1850. Gate verdicts are appended below by voicegate.
"""

PRESERVED = {
    "demo/prompts/marlowe-beats.txt": "\n".join(PROMPTS) + "\n",
    "demo/corpora/marlowe/heldout.txt": MARLOWE_HELDOUT,
    "demo/corpora/marlowe/train.txt": MARLOWE_TRAINING,
    **{f"demo/corpora/background/{name}.txt": text for name, text in BACKGROUND.items()},
    "demo/probes/general.yaml": PROBES_YAML,
    f"preregistrations/{GATE}.yaml": SPEC,
    "demo/deploy/compose.yaml": COMPOSE,
    "demo/adapters/lv-marlowe-v1/README.md": ADAPTER_README,
}


def write_workspace(root: Path) -> None:
    """Lay out the demo workspace as a user would have it before `voicegate register`."""
    root.mkdir(parents=True, exist_ok=True)
    if any(root.iterdir()):
        from voicegate._errors import VoicegateError

        raise VoicegateError(f"{root} is not empty: the demo needs a fresh directory")
    for rel, text in PRESERVED.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    commit_workspace(root, "demo workspace", name="voicegate demo", email="demo@voicegate.invalid")


def commit_workspace(root: Path, message: str, *, name: str, email: str) -> None:
    """gates/ and runs/ (ignored), then `git init` and one commit of everything laid out so far."""
    for sub in ("gates", "runs"):
        (root / sub).mkdir(exist_ok=True)
    (root / ".gitignore").write_text("/runs/\n", encoding="utf-8")
    git = ["git", "-c", f"user.name={name}", "-c", f"user.email={email}"]
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", message], cwd=root, check=True)
