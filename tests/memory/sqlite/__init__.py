"""What only the SQLite backend has: its file, its threads, its guard and journal."""
