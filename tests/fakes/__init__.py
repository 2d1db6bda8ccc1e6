"""Fakes of trawl's ports for tests: scripted, in-process, on an injected clock."""
