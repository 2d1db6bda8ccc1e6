"""trawl's HTTP API (issue 6): thin FastAPI routes over the crawl's own state and stores."""
