"""Contract suites: one set of tests run against every adapter of a port.

A package so its modules may share a base name with an integration test (test_fetcher).
"""
