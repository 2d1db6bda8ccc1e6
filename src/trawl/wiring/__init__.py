"""The only package that reads Settings and picks adapters (STYLE §3): `embedded` builds a
crawl on one machine's data directory, `seeds` reads and queues seeds. Cluster mode's
wiring is `trawl.cluster.wiring`."""
