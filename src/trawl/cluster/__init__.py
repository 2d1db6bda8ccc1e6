"""Cluster mode: partitions of registered domains, ownership on Redis, routed links."""
