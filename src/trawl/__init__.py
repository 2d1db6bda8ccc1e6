"""trawl: a polite, fast, robust web crawler."""

__version__ = "0.1.0"
