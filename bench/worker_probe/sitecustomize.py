"""Worker-stage probe for `python -m bench.worker_stages`: loaded through PYTHONPATH by every
Python process of a bench run, active only in the page workers' forkserver (and so in every
worker forked from it).

There it imports `trawl.parse.page_work` before any worker is forked and replaces the module
globals that `process_page` calls (decode, parse, links, hashes, WARC records, normalising,
main text, ...) with wrappers that add up each one's thread CPU time; `process_pages` is
wrapped for the batch's total. The main text is also timed apart for pages that came with
a window hint (their site's, or in older trees their host's in this worker) and for the rest.
Each worker writes its totals, with its link memo's counters, as JSON to
$WORKER_STAGES_OUT/<pid>.json every 20 batches (workers are stopped, not asked to exit).
"""

import os

from bench.probe_target import is_forkserver

if os.environ.get("WORKER_STAGES_OUT") and is_forkserver():
    import json
    import time

    from trawl.parse import page_work

    OUT = os.environ["WORKER_STAGES_OUT"]
    STAGES = (
        "decode_html", "parse_decoded", "links_of_tree", "parse_x_robots_tag", "content_hash",
        "_encode_capture", "normalise_links", "sha1_digest", "body_sha256", "_main_text",
        "_canonical", "shape_of_tree",
    )  # fmt: skip
    _cpu = dict.fromkeys(STAGES, 0.0)
    _totals = {"batches": 0, "pages": 0, "process_pages": 0.0}
    _totals.update(hinted=0, unhinted=0, hinted_cpu=0.0, unhinted_cpu=0.0)
    _clock = time.thread_time

    def _timed(name, fn):
        def timed(*args, **kwargs):
            started = _clock()
            try:
                return fn(*args, **kwargs)
            finally:
                _cpu[name] += _clock() - started

        return timed

    _main_text = page_work._main_text

    def _hinted_main_text(*args):
        if isinstance(args[0], str):  # older trees: (url, body, decoded), hints by host
            try:
                host = page_work.host_of(args[0])
            except Exception:
                host = ""
            hinted = page_work._window_hints.get(host, 0) > 0
        else:  # (body, decoded, first_try): the site's hint came with the page
            hinted = args[2] > 0
        started = _clock()
        try:
            return _main_text(*args)
        finally:
            key = "hinted" if hinted else "unhinted"
            _totals[key] += 1
            _totals[key + "_cpu"] += _clock() - started

    page_work._main_text = _hinted_main_text  # timed below, with the rest
    for _name in STAGES:
        if hasattr(page_work, _name):  # a stage of some trees only (--src)
            setattr(page_work, _name, _timed(_name, getattr(page_work, _name)))

    _process_pages = page_work.process_pages

    def _dump():
        memo = page_work._link_memo.stats()
        times = os.times()
        record = dict(
            _totals,
            stages=_cpu,
            process_cpu=times.user + times.system,
            memo_lookups=memo.lookups,
            memo_misses=memo.misses,
            memo_bypassed=getattr(memo, "bypassed", 0),  # older trees: never skipped
        )
        with open(os.path.join(OUT, f"{os.getpid()}.json"), "w") as f:
            json.dump(record, f)

    def process_pages(pages):
        started = _clock()
        out = _process_pages(pages)
        _totals["process_pages"] += _clock() - started
        _totals["pages"] += len(pages)
        _totals["batches"] += 1
        if _totals["batches"] % 20 == 0:
            _dump()
        return out

    process_pages.__module__ = page_work.__name__
    process_pages.__qualname__ = "process_pages"
    page_work.process_pages = process_pages
