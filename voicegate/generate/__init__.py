"""Filling a run with generations: driving the seat, or importing rows made elsewhere.

- `_schedule`  the interleaved order of (arm, seed, prompt) requests
- `_generate`  drive the seat (one or several replicas): resumable, nothing lost, nothing duplicated
- `_cells`     cells (one (seed, prompt) with every arm) and where an unfinished one may continue
- `_integrity` canary fingerprints: did the seat serve each arm its own weights
- `_quarantine` rows that may not be scored, moved aside, never deleted
- `_import`    bring in generations made outside voicegate
- `_simulate`  a dry run of a gate's schedule against a stand-in seat
"""
