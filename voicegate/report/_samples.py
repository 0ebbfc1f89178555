"""Pick the sample generations the report shows side by side: same prompt, same seed, every arm."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from voicegate.report._spans import contains_span
from voicegate.scoring import Span


@dataclass(frozen=True, kw_only=True)
class Sample:
    """One (prompt, seed) group: every arm's stored generation row, in arm order."""

    prompt_id: str
    seed: str
    rows: tuple[Mapping[str, Any], ...]


def _prompt_key(pid: str) -> tuple[int, int | str]:
    # Prompt ids of a .txt file are "0", "1", ...: order them as numbers, others as text.
    return (0, int(pid)) if pid.isdigit() else (1, pid)


def pick_samples(rows: Sequence[Mapping[str, Any]], arms: Sequence[str], seeds: Sequence[str],
                 spans: Mapping[str, Sequence[Span]], limit: int) -> list[Sample]:
    """Up to `limit` (prompt, seed) groups in which every arm answered.

    Groups where some arm's text contains one of that arm's copied spans come first
    (a reviewer should see the copying the scorer found), then distinct prompts in
    order under the first seed, so the page shows variety rather than one prompt
    under every seed.
    """
    if limit <= 0:
        return []
    groups: dict[tuple[str, str], dict[str, Mapping[str, Any]]] = {}
    for row in rows:
        if row.get("kind", "voice") != "voice":
            continue
        key = (str(row.get("prompt_id")), str(row.get("seed")))
        groups.setdefault(key, {})[str(row.get("arm"))] = row
    seed_rank = {s: i for i, s in enumerate(seeds)}
    complete = [(k, g) for k, g in groups.items() if all(a in g for a in arms)]

    def has_span(g: Mapping[str, Mapping[str, Any]]) -> bool:
        return any(spans.get(a) and contains_span(str(g[a].get("text", "")), spans[a]) for a in arms)

    # Where the scorer says a span was found (its seed and prompt_id), round-robin over
    # arms so each copying arm gets shown; then groups whose text contains a span.
    named: list[tuple[str, str]] = []
    per_arm = [[(str(sp.prompt_id), str(sp.seed)) for sp in spans.get(a) or []
                if sp.prompt_id is not None and sp.seed is not None] for a in arms]
    for i in range(max((len(x) for x in per_arm), default=0)):
        for keys in per_arm:
            if i < len(keys) and keys[i] not in named:
                named.append(keys[i])
    named_rank = {k: i for i, k in enumerate(named)}
    ranked = sorted(complete, key=lambda kg: (named_rank.get(kg[0], len(named_rank)), not has_span(kg[1]),
                                              seed_rank.get(kg[0][1], len(seed_rank)),
                                              _prompt_key(kg[0][0]), kg[0][1]))
    chosen: list[tuple[tuple[str, str], dict[str, Mapping[str, Any]]]] = []
    used_prompts: set[str] = set()
    for kg in ranked:  # first pass: one group per prompt
        if len(chosen) >= limit:
            break
        if kg[0][0] not in used_prompts:
            chosen.append(kg)
            used_prompts.add(kg[0][0])
    for kg in ranked:  # then fill up if there are fewer prompts than the limit
        if len(chosen) >= limit:
            break
        if kg not in chosen:
            chosen.append(kg)
    return [Sample(prompt_id=k[0], seed=k[1], rows=tuple(g[a] for a in arms)) for k, g in chosen]
