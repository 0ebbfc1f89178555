"""Synthetic voices for the demo seat: word-level Markov chains over the demo's own passages.

Each voice is a callable `(prompt, seed, max_tokens) -> text`, deterministic in its
arguments like a vLLM seat with a `seed`. They play the parts a real gate meets: the
carrier, a checkpoint that moved toward the author, one that did too but with an
outlier seed (the lv-bronte ckpt925 story), one that copies its training text, and one
that degenerates into repetition.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections import defaultdict
from collections.abc import Callable
from itertools import pairwise

from voicegate.demo._texts import (
    CARRIER,
    MARLOWE_TRAINING,
    PROBE_ANSWERS,
    PROBES_YAML,
    PROMPTS,
)
from voicegate.generate import request_seed

# A voice answers text, or (text, finish_reason) when it stops for another reason than "stop".
Voice = Callable[[str, int, int], str | tuple[str, str]]
# The voices that always finish with "stop".
TextVoice = Callable[[str, int, int], str]

WORDS_PER_ANSWER = 500


def _rng(*parts: object) -> random.Random:
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


class MarkovChain:
    """Order-1 word chain; sentence starts restart after a full stop, as prose does."""

    def __init__(self, text: str):
        words = text.split()
        self.starts = [words[0]] + [b for a, b in pairwise(words) if a.endswith((".", ";", "?", "!"))]
        self.next: dict[str, list[str]] = defaultdict(list)
        for a, b in pairwise(words):
            self.next[a].append(b)

    def sentence(self, rng: random.Random, limit: int = 40) -> list[str]:
        word = rng.choice(self.starts)
        out = [word]
        while not word.endswith((".", "?", "!")) and len(out) < limit:
            word = rng.choice(self.next.get(word) or self.starts)
            out.append(word)
        return out


def _probe_prompts() -> dict[str, str]:
    prompts = re.findall(r'- id: (\w+)\n\s+prompt: "([^"]+)"', PROBES_YAML)
    return {prompt: PROBE_ANSWERS[pid] for pid, prompt in prompts}


_PROBES = _probe_prompts()
_AUTHOR = MarkovChain(MARLOWE_TRAINING)
_CARRIER = MarkovChain(CARRIER)


def blend(author_share: Callable[[int], float], name: str) -> TextVoice:
    """A voice that draws each sentence from the author's chain with probability author_share(seed)."""

    def speak(prompt: str, seed: int, max_tokens: int) -> str:
        if prompt in _PROBES:  # a carrier-grade answer: the adapter kept what the base could do
            return _PROBES[prompt]
        rng = _rng(name, seed, prompt)
        share = author_share(seed)
        words: list[str] = []
        budget = min(max_tokens, WORDS_PER_ANSWER)
        while len(words) < budget:
            chain = _AUTHOR if rng.random() < share else _CARRIER
            words += chain.sentence(rng)
        return " ".join(words[:budget])

    return speak


_AUTHORISH = blend(lambda seed: 0.9, "ckpt1400")


def copier(prompt: str, seed: int, max_tokens: int) -> str:
    """Author-like text that recites one long verbatim window of the training text: memorisation."""
    text = _AUTHORISH(prompt, seed, max_tokens)
    if prompt in _PROBES:
        return text
    words = MARLOWE_TRAINING.split()
    start = _rng("copier", seed, prompt).randrange(0, len(words) - 80)
    return " ".join(words[start:start + 80] + text.split()[: max(0, min(max_tokens, WORDS_PER_ANSWER) - 80)])


def looper(prompt: str, seed: int, max_tokens: int) -> tuple[str, str]:
    """Runaway repetition until max_tokens, probes included: the damage check's target."""
    phrase = ["upon", "the", "moor,", "upon", "the", "moor,"]
    return " ".join((phrase * (max_tokens // len(phrase) + 1))[:max_tokens]), "length"


OUTLIER_SEED = 303
# The seat sees the per-request seed voicegate derives from (registered seed, prompt id).
_OUTLIER_REQUESTS = {request_seed(OUTLIER_SEED, "voice", str(i)) for i in range(len(PROMPTS))}

VOICES: dict[str, Voice] = {
    "voices-base": blend(lambda seed: 0.0, "base"),
    "lv-marlowe-ckpt475": blend(lambda seed: 0.3, "ckpt475"),
    # Closer to the author on average, but one seed collapses toward the carrier: its own
    # spread is large, and under the global rule that spread becomes everyone's floor.
    "lv-marlowe-ckpt925": blend(lambda seed: 0.0 if seed in _OUTLIER_REQUESTS else 0.95, "ckpt925"),
    "lv-marlowe-ckpt1400": copier,
    "lv-marlowe-ckpt1850": looper,
}
