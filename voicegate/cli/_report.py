"""voicegate report (not written yet)."""
