"""Real servers on loopback for the cluster tests: Redis, PostgreSQL, an S3-compatible store."""
