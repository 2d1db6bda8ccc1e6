"""Real servers for the tests that need them, each started once per session on loopback:
PostgreSQL (`postgres_server`, `postgres_dsn`), Redis (`redis_single`, `redis_cluster`,
`redis_server`) and S3 (`s3_server`). Registered here, not imported into test modules, so
every module shares one instance of each.

Under pytest-xdist (scripts/test runs tests/e2e with `-n 3 --dist loadfile`) a session is one
worker process: each worker that needs a server starts its own, on free ports in a temporary
directory of its own, so workers share no server, port or file."""

pytest_plugins = ["tests.servers.postgres", "tests.servers.redis", "tests.servers.s3"]
