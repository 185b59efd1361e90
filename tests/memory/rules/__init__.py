"""The backend-neutral rules of memory.rules: scoring and temporal cues."""
