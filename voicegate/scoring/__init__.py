"""Scoring: stored generations in, voice distances, verdicts and the ship pick out.

Everything here is pure (arrays and texts in, numbers out) except the
content-addressed cache in `_cache`. docs/design.md §3 defines the numbers, §6b the
details two implementations must agree on; each module's docstring says which
part it implements:

- `_tokens`        word tokens (NFKC, casefold, letters with inner apostrophes)
- `_docs`          a tokenized text as two arrays: its distinct tokens and the token ids in order
- `_cells`         voice rows grouped by (arm, seed), tokenized once over one shared vocabulary
- `_cache`         the content-addressed on-disk cache of corpus-side work (the only file I/O here)
- `_views`         voice views: how d(a, s) of an (arm, seed) pool toward one author's text is measured
- `_stylometric`   Cosine Delta against the registered reference (MFW, z-scores)
- `_embedding`     centroid cosine distance under a pinned sentence-transformers model
- `_copying`       hashed word n-gram index, overlap, longest verbatim runs
- `_damage`        degeneration and probe checks
- `_harness`       candidate generations identical to the base's (a seat that skipped the adapter)
- `_ruler`         the ruler check: can the stylometric reference tell this author (corpora only)
- `_verdicts`      delta_cb, both floors, verdicts, DISAGREE, the ship pick (`decide`)
- `_specificity`   does a candidate move toward this author, or toward any writer of the kind (impostors)
- `_replicates`    seeds that are not replicates: an arm whose seeds gave the same texts
- `_bootstrap`     the informational prompt-clustered interval
- `_signature`     what shaped the numbers
- `_similarity`    the seat-integrity canary method: its parameters, the comparison, calibration, attribution
- `_carrier_agreement` the base's (or an adapter's) greedy answers judged against its own files' answers
- `_integrity`     the seat's integrity judged again from the stored checks (`verdict`), the replicas behind
                   the rows (`generate` and `gate` both use it, so `gate` needs no `generate`)
- `_score`         `measure_gate` (per-seed distances toward every target, copying, damage: once) and
                   `score_gate`: a spec and its rows in, the result out
- `_result`        the result as types (`GateResult`, verdict enums) and its one JSON form
"""

from voicegate.scoring._cache import Cache
from voicegate.scoring._carrier_agreement import CarrierCheck, judge_carrier
from voicegate.scoring._copying import (
    NgramIndex,
    build_index,
    copy_stats,
    copying_verdict,
    ngram_hashes,
    vocab_hashes,
)
from voicegate.scoring._damage import (
    check_probe,
    degeneration,
    is_runaway,
)
from voicegate.scoring._docs import TokenDoc, doc_from_text, doc_from_tokens
from voicegate.scoring._integrity import (
    Part,
    Tally,
    alike_problem,
    cells_by_part,
    describe_parts,
    failed_parts,
    mixed_cells,
    part_of,
    replica_shares,
    unchecked_parts,
    undecided_parts,
    verdict,
)
from voicegate.scoring._result import (
    ArmResult,
    CandidateResult,
    Copying,
    Damage,
    GateResult,
    Integrity,
    Provenance,
    ReplicaShare,
    Span,
    Specific,
    Specificity,
    Verdicts,
    Voice,
    detectable_rules,
    is_result,
    result_text,
)
from voicegate.scoring._score import (
    decided_arms,
    measure_gate,
    score_gate,
    score_gate_both,
    warm_cache,
)
from voicegate.scoring._signature import IntegrityEvidence
from voicegate.scoring._similarity import (
    METHOD,
    METHOD_ID,
    Calibration,
    CanaryParams,
    attribute,
    calibrate,
    canary_cell,
    complete,
    detection_floor,
    identity_outcome,
    is_prefix,
    replica_differs,
    similarity,
)
from voicegate.scoring._specificity import specificity
from voicegate.scoring._stylometric import (
    build_reference,
    cosine_delta,
    word_counts,
)
from voicegate.scoring._tokens import tokenize
from voicegate.scoring._verdicts import decide, rnd, ship_pick

__all__ = [
    "METHOD",
    "METHOD_ID",
    "ArmResult",
    "Cache",
    "Calibration",
    "CanaryParams",
    "CandidateResult",
    "CarrierCheck",
    "Copying",
    "Damage",
    "GateResult",
    "Integrity",
    "IntegrityEvidence",
    "NgramIndex",
    "Part",
    "Provenance",
    "ReplicaShare",
    "Span",
    "Specific",
    "Specificity",
    "Tally",
    "TokenDoc",
    "Verdicts",
    "Voice",
    "alike_problem",
    "attribute",
    "build_index",
    "build_reference",
    "calibrate",
    "canary_cell",
    "cells_by_part",
    "check_probe",
    "complete",
    "copy_stats",
    "copying_verdict",
    "cosine_delta",
    "decide",
    "decided_arms",
    "degeneration",
    "describe_parts",
    "detectable_rules",
    "detection_floor",
    "doc_from_text",
    "doc_from_tokens",
    "failed_parts",
    "identity_outcome",
    "is_prefix",
    "is_result",
    "is_runaway",
    "judge_carrier",
    "measure_gate",
    "mixed_cells",
    "ngram_hashes",
    "part_of",
    "replica_differs",
    "replica_shares",
    "result_text",
    "rnd",
    "score_gate",
    "score_gate_both",
    "ship_pick",
    "similarity",
    "specificity",
    "tokenize",
    "unchecked_parts",
    "undecided_parts",
    "verdict",
    "vocab_hashes",
    "warm_cache",
    "word_counts",
]
