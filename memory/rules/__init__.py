"""Backend-neutral rules both stores follow: scoring, time, words, memory validation,
segments, search terms, the memory_sql policy and passwords. Imports neither sqlite3
nor psycopg, nor any backend."""
