"""Filling a run with generations: driving the seat, or importing rows made elsewhere.

- `_schedule`  the interleaved order of (arm, seed, prompt) requests
- `_generate`  drive the seat: resumable, nothing lost, nothing duplicated
- `_import`    bring in generations made outside voicegate
- `_simulate`  a dry run of a gate's schedule against a stand-in seat
"""
