"""PostgreSQL, one shared database with row-level security per person: the store,
recall, memory_sql, the accounts registry and the schema. Imports neither memory.sqlite
nor sqlite3."""
