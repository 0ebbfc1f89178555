"""voicegate generate (not written yet)."""
