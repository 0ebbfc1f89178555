
from __future__ import annotations

from voicegate.demo._run import run_demo, run_vllm_demo

__all__ = [
    "run_demo",
    "run_vllm_demo",
]
