"""Selective JavaScript rendering (issue 18): which pages go to a headless browser, the
browser that renders them under trawl's politeness rules, and what a render adds."""
