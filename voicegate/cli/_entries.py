"""voicegate amend / ship / verify / import (not written yet)."""
