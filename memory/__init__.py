"""The store and the memory logic on top of it: SQLite schema and migrations, messages,
structured memories with FSRS scoring, episodes, temporal cues, recall and the guarded
SQL engine. The bottom layer beside config: it imports nothing else from Companion."""
