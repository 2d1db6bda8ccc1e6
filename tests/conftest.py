"""Real servers for the tests that need them, each started once per session on loopback:
PostgreSQL (`postgres_server`, `postgres_dsn`), Redis (`redis_single`, `redis_cluster`,
`redis_server`) and S3 (`s3_server`). Registered here, not imported into test modules, so
every module shares one instance of each."""

pytest_plugins = ["tests.servers.postgres", "tests.servers.redis", "tests.servers.s3"]
