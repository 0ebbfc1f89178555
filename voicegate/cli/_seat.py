"""voicegate seat ... (not written yet)."""
