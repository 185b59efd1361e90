"""The SQLite store and the memory logic on top of it (no imports from other packages)."""
