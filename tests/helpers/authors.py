"""Author gates on the trained tiny voices, with impostors: the specificity axis's test data, as specs.

Seven authors whose voices are in ``shared/fixtures/tiny-voices`` (the fixture README says what each was
trained on and which novel is held out). One gate per author: held out that author's held-out novel,
training text that author's training novels, background the five older novels (Fielding ×2, Sterne ×2,
Richardson) plus the other authors' held-out novels, and as impostors every other author's held-out
novel. The sisters' gates leave both Brontës out of the background (as the fixture README's check did).

Corpora are named by absolute path where they are (``shared/corpora/british-fiction``), never copied.
"""

from __future__ import annotations

import json
from typing import Any

from helpers.shared import CORPUS, SHARED, VOICES  # noqa: F401

CHECK_TEXTS = VOICES / "check-texts.json"

# author -> (gate name, held-out novel, training novels, the voices trained on that author)
AUTHORS: dict[str, tuple[str, str, tuple[str, ...], tuple[str, ...]]] = {
    "Charlotte Bronte": ("lv-charlotte", "CBronte_Villette", ("CBronte_Jane", "CBronte_Professor"),
                         ("lv-bronte-ckpt60", "lv-bronte-ckpt475", "lv-bronte-ckpt925", "lv-bronte-parrot")),
    "Anne Bronte": ("lv-anne", "ABronte_Agnes", ("ABronte_Tenant",), ("lv-anne",)),
    "Jane Austen": ("lv-austen", "Austen_Pride", ("Austen_Emma", "Austen_Sense"), ("lv-austen",)),
    "Charles Dickens": ("lv-dickens", "Dickens_David", ("Dickens_Bleak", "Dickens_Hard"), ("lv-dickens",)),
    "George Eliot": ("lv-eliot", "Eliot_Middlemarch", ("Eliot_Adam", "Eliot_Mill"), ("lv-eliot",)),
    "William Makepeace Thackeray": ("lv-thackeray", "Thackeray_Vanity", ("Thackeray_Barry", "Thackeray_Pendennis"),
                                    ("lv-thackeray",)),
    "Anthony Trollope": ("lv-trollope", "Trollope_Phineas", ("Trollope_Barchester", "Trollope_Prime"),
                         ("lv-trollope",)),
}
SISTERS = ("Charlotte Bronte", "Anne Bronte")
OLDER = ("Fielding_Joseph", "Fielding_Tom", "Sterne_Tristram", "Sterne_Sentimental", "Richardson_Pamela")


def skip_reason() -> str | None:
    if not CORPUS.is_dir():
        return f"public-domain corpus not present at {CORPUS}"
    if not CHECK_TEXTS.is_file():
        return f"tiny-voices check texts not present at {CHECK_TEXTS}"
    return None


def novel(name: str) -> str:
    return str(CORPUS / f"{name}.txt")


def voices_of(author: str) -> tuple[str, ...]:
    return AUTHORS[author][3]


def author_spec(author: str, voices: tuple[str, ...], *, impostors: tuple[str, ...] | None = None,
                specificity: str = "decides", rule: str = "pairwise-max-spread", seeds: tuple[int, ...] = (1, 2, 3),
                prompts: str = "prompts/tiny-voices.txt", max_tokens: int = 320) -> dict[str, Any]:
    """The gate spec for `author` with `voices` as candidate arms (each voice's arm and model named after it)."""
    gate, held, training, _ = AUTHORS[author]
    others = [a for a in AUTHORS if a != author]
    background = [*OLDER, *(AUTHORS[a][1] for a in others if not (author in SISTERS and a in SISTERS))]
    chosen = others if impostors is None else list(impostors)
    spec: dict[str, Any] = {
        "gate": gate,
        "author": author,
        "seat": {"url": "http://127.0.0.1:8027/v1", "base_model": "base"},
        "arms": [{"name": "base", "model": "base", "role": "base"},
                 *({"name": v, "model": v, "role": "candidate"} for v in voices)],
        "prompts": prompts,
        "seeds": list(seeds),
        "sampling": {"temperature": 0.8, "top_p": 0.95, "max_tokens": max_tokens},
        "expected_words": 240,
        "corpora": {"heldout": [novel(held)], "training": [novel(t) for t in training],
                    "background": [novel(b) for b in background]},
        "voice": {"view": "stylometric", "mfw": 1000, "specificity": specificity},
        "floor": {"rule": rule},
        "artifacts": {"record": f"gates/{gate}.md"},
    }
    if chosen:
        spec["corpora"]["impostors"] = {a: [novel(AUTHORS[a][1])] for a in chosen}
    return spec


def check_rows(voices: tuple[str, ...]) -> list[dict[str, Any]]:
    """The fixture's generations of the base and `voices` as import rows (prompt_id = the line index)."""
    texts = json.loads(CHECK_TEXTS.read_text(encoding="utf-8"))
    return [{"arm": arm, "seed": int(seed), "prompt_id": str(i), "text": text}
            for arm in ("base", *voices) for seed, batch in texts[arm].items() for i, text in enumerate(batch)]
