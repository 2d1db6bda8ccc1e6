"""The page workers' forkserver imports this module first (and nothing else does):
SIGINT/SIGTERM are ignored there from then on, so every worker forked from it ignores them
from birth (see loop.workers). A module of its own because guessing "am I the forkserver?"
from inside a shared module was wrong in any `python -c` process that had imported
multiprocessing.forkserver (a pytest-xdist worker: it then ignored both signals, and so did
every process it started)."""

from trawl.loop.workers import die_with_parent, ignore_stop_signals

ignore_stop_signals()
die_with_parent()  # the crawl that started us; its workers die with us (loop.workers)
