"""The names in an embedded crawl's data directory (layout: see trawl.wiring).

Apart from wiring so the read-back commands can open a data directory without importing
the crawl's machinery (issue 14: start-up time).
"""

DB_NAME = "trawl.db"
WARC_DIR = "warc"
BLOOM_NAME = "seen.bloom"
INLINKS_NAME = "inlinks.bin"  # the in-link counter (frontier.inlinks), saved at checkpoints
