"""Scrapy baseline for trawl's speed benchmark: the same polite crawl, done by Scrapy.

`python -m bench.scrapy_baseline.run --help` runs it; `spider.py` holds the spider, the
hosts-file DNS resolver, the per-site download-slot middleware and the storage pipeline.
"""
