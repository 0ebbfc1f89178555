"""voicegate demo (not written yet)."""
