"""The use cases: what a user (or the CLI) does to a gate, one function each."""
