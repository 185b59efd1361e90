"""What only Postgres has to prove: row-level security, roles, its schema."""
