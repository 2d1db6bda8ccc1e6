"""The crawl loop's async shell: the only package that awaits crawl I/O (docs/ARCHITECTURE.md)."""
