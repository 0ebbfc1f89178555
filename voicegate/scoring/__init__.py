"""Scoring: stored generations in, voice distances, verdicts and the ship pick out.

Everything here is pure (arrays and texts in, numbers out) except the
content-addressed cache in `_cache`. DESIGN.md §3 defines the numbers, §6b the
details two implementations must agree on; each module's docstring says which
part it implements:

- `_tokens`        word tokens (NFKC, casefold, letters with inner apostrophes)
- `_stylometric`   Cosine Delta against the registered reference (MFW, z-scores)
- `_embedding`     centroid cosine distance under a pinned sentence-transformers model
- `_copying`       hashed word n-gram index, overlap, longest verbatim runs
- `_damage`        degeneration and probe checks
- `_harness`       candidate generations identical to the base's (a seat that skipped the adapter)
- `_ruler`         the ruler check: can the stylometric reference tell this author (corpora only)
- `_verdicts`      delta_cb, both floors, verdicts, DISAGREE, the ship pick (`decide`)
- `_bootstrap`     the informational prompt-clustered interval
- `_signature`     what shaped the numbers
- `_similarity`    the seat-integrity canary method: its parameters, the comparison, calibration, attribution
- `_integrity`     the seat's integrity judged again from the stored checks (`verdict`), the replicas behind
                   the rows (`generate` and `gate` both use it, so `gate` needs no `generate`)
- `_score`         `measure_gate` (per-seed distances toward every target, copying, damage: once) and
                   `score_gate`: a spec and its rows in, the result out
- `_result`        the result as types (`GateResult`, verdict enums) and its one JSON form
"""

from voicegate.scoring._cache import Cache
from voicegate.scoring._carrier import CarrierCheck, judge_carrier
from voicegate.scoring._copying import (
    NgramIndex,
    build_index,
    copy_stats,
    copying_verdict,
    ngram_hashes,
    token_hashes,
    vocab_hashes,
)
from voicegate.scoring._damage import (
    check_probe,
    damage_verdict,
    degeneration,
    is_runaway,
)
from voicegate.scoring._docs import TokenDoc, doc_from_text, doc_from_tokens
from voicegate.scoring._embedding import MISSING, available
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
    Confusion,
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
    impostor_outcome,
    is_result,
    result_text,
)
from voicegate.scoring._score import (
    Measures,
    check_rows,
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
    detection_floor,
    identity_outcome,
    identity_problem,
    is_prefix,
    replica_differs,
    similarity,
)
from voicegate.scoring._specificity import specificity
from voicegate.scoring._stylometric import (
    Reference,
    build_reference,
    cosine_delta,
    count_matrix,
    word_counts,
)
from voicegate.scoring._tokens import TOKENIZER_NAME, tokenize
from voicegate.scoring._verdicts import decide, ship_pick

__all__ = [
    "METHOD",
    "METHOD_ID",
    "MISSING",
    "TOKENIZER_NAME",
    "ArmResult",
    "Cache",
    "Calibration",
    "CanaryParams",
    "CandidateResult",
    "CarrierCheck",
    "Confusion",
    "Copying",
    "Damage",
    "GateResult",
    "Integrity",
    "IntegrityEvidence",
    "Measures",
    "NgramIndex",
    "Part",
    "Provenance",
    "Reference",
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
    "available",
    "build_index",
    "build_reference",
    "calibrate",
    "canary_cell",
    "cells_by_part",
    "check_probe",
    "check_rows",
    "copy_stats",
    "copying_verdict",
    "cosine_delta",
    "count_matrix",
    "damage_verdict",
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
    "identity_problem",
    "impostor_outcome",
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
    "score_gate",
    "score_gate_both",
    "ship_pick",
    "similarity",
    "specificity",
    "token_hashes",
    "tokenize",
    "unchecked_parts",
    "undecided_parts",
    "verdict",
    "vocab_hashes",
    "warm_cache",
    "word_counts",
]
