"""voicegate score (not written yet)."""
