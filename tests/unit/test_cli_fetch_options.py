"""Issue 15: `trawl node` spelled out its own copy of the crawl's network and User-Agent
flags, and of the settings they make. Now crawl, serve and node share one definition; these
tests pin that all three parse the same flags into the same settings."""

from __future__ import annotations

from trawl.cli.dispatch import build_parser
from trawl.cli.options import fetch_settings, settings_from_args
from trawl.config import Settings

CONTACT = "https://trawl.invalid/contact"
AGENT = f"trawl/0 (+{CONTACT})"
FETCH_FLAGS = [
    "--resolve", "a.test:127.0.0.2", "--resolve", "*.b.test:127.0.0.3",
    "--hosts-file", "hosts.txt", "--dns-server", "127.0.0.53", "--allow-private",
    "--user-agent", AGENT, "--contact", CONTACT,
]  # fmt: skip
NODE = ["node", "--cluster", "cluster.toml"]


def node_settings(argv: list[str]) -> Settings:
    # As cmd_node makes them: a node runs until told to stop.
    args = build_parser().parse_args(argv)
    return fetch_settings(args, continuous=True, max_pages=0, max_time_s=0.0)


def test_issue_15_crawl_serve_and_node_read_the_fetch_flags_alike() -> None:
    parser = build_parser()
    crawl = settings_from_args(parser.parse_args(["crawl", *FETCH_FLAGS]))
    serve = settings_from_args(parser.parse_args(["serve", *FETCH_FLAGS]))
    node = node_settings([*NODE, *FETCH_FLAGS])
    assert crawl.network == serve.network == node.network
    network = node.network
    assert network.resolve == ("a.test:127.0.0.2", "*.b.test:127.0.0.3")
    assert (network.hosts_file, network.dns_server, network.allow_private) == (
        "hosts.txt",
        "127.0.0.53",
        True,
    )
    for settings in (crawl, serve, node):
        assert (settings.crawl.user_agent, settings.crawl.contact_url) == (AGENT, CONTACT)


def test_issue_15_flags_not_given_keep_the_defaults_and_a_node_is_unbounded() -> None:
    node = node_settings([*NODE, "--contact", CONTACT])
    assert node.network == Settings().network
    assert (node.crawl.continuous, node.crawl.max_pages, node.crawl.max_time_s) == (True, 0, 0.0)
    crawl = settings_from_args(
        build_parser().parse_args(["crawl", "--contact", CONTACT, "--max-pages", "7"])
    )
    assert (crawl.crawl.continuous, crawl.crawl.max_pages) == (False, 7)
