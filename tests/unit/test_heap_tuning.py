"""loop.heap_tuning: glibc keeps the top of the crawl's heap instead of faulting it in anew.

Each case runs in a fresh interpreter: the settings are process-wide, and the test runner's
own heap must stay as it was."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")

# A fetch's pattern: a ~150 KB body joined from its chunks, then freed, 300 times over.
_CHURN = """
import resource, sys
from trawl.loop.heap_tuning import tune_heap
took = tune_heap() if sys.argv[1] == "tuned" else None
def churn():
    for _ in range(300):
        parts = [bytes(30_000) for _ in range(5)]
        body = b"".join(parts)
        del parts, body
churn()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
churn()
print(took, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _run(mode: str) -> tuple[str, int]:
    done = subprocess.run(
        [sys.executable, "-c", _CHURN, mode], capture_output=True, text=True, check=True
    )
    took, faults = done.stdout.split()
    return took, int(faults)


def test_a_tuned_heap_keeps_freed_blocks_instead_of_faulting_them_in_again() -> None:
    took, tuned = _run("tuned")
    assert took == "True"  # glibc took every setting
    _, default = _run("default")
    # With glibc's defaults each freed body's pages go back to the kernel (~30 faults a
    # body); tuned, they stay mapped.
    assert default > 1_000
    assert tuned < default / 10
