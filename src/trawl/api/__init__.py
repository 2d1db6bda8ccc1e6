"""trawl's HTTP API (issue 6): thin FastAPI routes over the crawl's own state and stores."""

# Here rather than in api.serve, so the command-line parser can name it without importing
# uvicorn and FastAPI (issue 14: start-up time).
DEFAULT_LISTEN = "127.0.0.1:8700"
