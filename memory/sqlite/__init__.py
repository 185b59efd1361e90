"""SQLite, one file per person: the store, its thread adapter, recall, memory_sql and
the accounts registry. Imports neither memory.postgres nor psycopg."""
