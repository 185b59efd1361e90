"""The contract of ``memory.AsyncStore``: each area once, run on SQLite and on Postgres."""
