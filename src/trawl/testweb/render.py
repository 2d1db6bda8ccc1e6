"""Render test-web pages to bytes: HTML with spelled links, and a small PDF.

Rendering needs the port because absolute links and redirects carry it
(`http://site0007.test:38123/`), so bodies are made by the server, not stored.
"""

from __future__ import annotations

import random
from html import escape

from trawl.testweb import text
from trawl.testweb.layout import Decoration, Form, Link, Page, Place, Site

_STYLE = "body{font-family:sans-serif;max-width:48em;margin:auto;line-height:1.5}"


def relative_ref(base_dir: str, target: str) -> str:
    """The shortest relative reference from directory `base_dir` to absolute path `target`.

    `base_dir` ends in "/"; the result resolves back to `target` per RFC 3986 §5.2,
    e.g. ("/docs/a/", "/docs/b/3.html") -> "../b/3.html", ("/docs/a/", "/docs/a/") -> "./".
    """
    base = [s for s in base_dir.split("/") if s]
    *dirs, name = target.split("/")
    dirs = [s for s in dirs if s]
    common = 0
    while common < min(len(base), len(dirs)) and base[common] == dirs[common]:
        common += 1
    ups = "../" * (len(base) - common)
    downs = "".join(d + "/" for d in dirs[common:])
    return ups + downs + name or "./"


def href(page: Page, link: Link, port: int) -> str:
    """The URL of `link` as written on `page`."""
    same_host = link.host == page.host
    if same_host and link.form is Form.RELATIVE:
        base_dir = page.base_dir or page.path.rsplit("/", 1)[0] + "/"
        url = relative_ref(base_dir, link.path)
    elif same_host and link.form is Form.ABSOLUTE_PATH:
        url = link.path
    elif link.form is Form.UPPER_HOST:
        url = f"http://{link.host.upper()}:{port}{link.path}"
    else:
        url = f"http://{link.host}:{port}{link.path}"
    if link.decoration in (Decoration.TRACKING, Decoration.BOTH):
        url += "?utm_source=x&utm_medium=y"
    if link.decoration in (Decoration.FRAGMENT, Decoration.BOTH):
        url += f"#sec-{len(link.anchor) % 7}"
    return url


def _a(page: Page, link: Link, port: int) -> str:
    return f'<a href="{escape(href(page, link, port))}">{escape(link.anchor)}</a>'


def _head(site: Site, page: Page, port: int) -> list[str]:
    rng = random.Random(page.text_seed ^ 0x5EED)
    lines = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f"<title>{escape(page.title)} | {site.domain}</title>",
        f'<meta name="description" content="{escape(text.sentence(rng))}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
    ]
    directives = [d for d, on in (("noindex", page.noindex), ("nofollow", page.nofollow)) if on]
    if directives:
        lines.append(f'<meta name="robots" content="{", ".join(directives)}">')
    if page.base_dir is not None:
        base = f"http://{page.host}:{port}{page.base_dir}" if page.base_absolute else page.base_dir
        lines.append(f'<base href="{escape(base)}">')
    if page.canonical is not None:
        host, path = page.canonical
        lines.append(f'<link rel="canonical" href="http://{host}:{port}{escape(path)}">')
    if page.next_path is not None:
        nxt = Link(page.host, page.next_path, Form.ABSOLUTE_PATH, Decoration.NONE, "", Place.NAV)
        lines.append(f'<link rel="next" href="{escape(href(page, nxt, port))}">')
    lines += [f"<style>{_STYLE}</style>", "</head>"]
    return lines


def render_html(site: Site, page: Page, port: int, revision: int | None = None) -> bytes:
    """The page as HTML; `revision` (live pages) picks a new text and names it in the text."""
    # A str seed is hashed with SHA-512 by `random`, so revisions are the same in every process.
    seed = page.text_seed if revision is None else f"{page.text_seed}:{revision}"
    rng = random.Random(seed)
    nav = [f"<li>{_a(page, link, port)}</li>" for link in page.links if link.place is Place.NAV]
    body_links = [_a(page, link, port) for link in page.links if link.place is Place.BODY]
    aside = [f"<li>{_a(page, link, port)}</li>" for link in page.links if link.place is Place.ASIDE]
    paragraphs = [text.paragraph(rng, page.topic) for _ in range(max(page.paragraphs, 1))]
    if revision is not None:
        paragraphs.insert(0, f"Live update number {revision}.")
    # Spread the body links over the paragraphs, a few per paragraph, like inline links.
    for n, anchor in enumerate(body_links):
        at = n % len(paragraphs)
        paragraphs[at] += f" See also {anchor}."
    lines = _head(site, page, port)
    lines += [
        "<body>",
        f"<header><h1>{escape(site.domain)}</h1>",
        f"<nav><ul>{''.join(nav)}</ul></nav></header>",
        f"<main><article><h2>{escape(page.title)}</h2>",
    ]
    lines += [f'<p id="sec-{n}">{p}</p>' for n, p in enumerate(paragraphs)]
    lines += [
        "</article></main>",
        f"<aside><h3>Elsewhere on the web</h3><ul>{''.join(aside)}</ul></aside>",
        f"<footer><p>&copy; 2024 {escape(site.domain)}. All rights reserved.</p></footer>",
        "</body>",
        "</html>",
        "",
    ]
    return "\n".join(lines).encode()


def render_document(page: Page) -> bytes:
    """A PageKind.DOCUMENT: the same bytes on every site (no site name, no links)."""
    rng = random.Random(page.text_seed)
    paragraphs = [text.paragraph(rng, page.topic) for _ in range(max(page.paragraphs, 1))]
    lines = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        '<head><meta charset="utf-8">',
        f"<title>{escape(page.title)}</title></head>",
        f"<body><main><article><h1>{escape(page.title)}</h1>",
        *(f"<p>{p}</p>" for p in paragraphs),
        "</article></main></body>",
        "</html>",
        "",
    ]
    return "\n".join(lines).encode()


def render_pdf(page: Page) -> bytes:
    """A small, well-formed-looking PDF: enough for content-type handling and WARC records."""
    rng = random.Random(page.text_seed)
    stream = " ".join(text.paragraph(rng) for _ in range(6)).encode()
    return (
        b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n"
        b"2 0 obj << /Type /Pages /Kids [] /Count 0 >> endobj\n"
        + b"3 0 obj << /Length %d >> stream\n" % len(stream)
        + stream
        + b"\nendstream endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"
    )
