"""Does a plainly fetched HTML page need a browser to show its content? (issue 18)

How this works. A page built by JavaScript comes back from a plain fetch as a shell: a
little markup, a script bundle, and an empty element the bundle mounts the application
into. Rendering costs many plain fetches, so only pages that look like such a shell are
named here, each with the reason; whether one is rendered is the render policy's call
(render.policy: shares, per-site learning, the operator's forcing).

Rules, in order, on the tree already parsed for links (nothing is parsed again):
1. A page whose main text holds `MIN_PROSE_TOKENS` words of prose is not a shell. This is
   the answer for nearly every page, and it costs one comparison.
2. Its visible text (the body's text outside script, style, noscript and template) must
   be short: at most `SHELL_MAX_TEXT_CHARS`. A sparse page with a form or a heading passes
   this rule and is caught by the next ones.
3. An application mount point (`MOUNT_SELECTOR`: the ids React, Vue, Next.js, Nuxt,
   Gatsby, Svelte and Angular apps mount into) that is empty — no more than
   `MAX_MOUNT_TEXT_CHARS` of text, room for a "Loading…" — is `EMPTY_MOUNT`. A mount that
   holds text was rendered on the server (Next.js `__NEXT_DATA__`, Nuxt `__NUXT__`, React
   `data-reactroot` pages): not a shell, whatever else the page holds.
4. No mount point, but a `<noscript>` that speaks of JavaScript ("You need to enable
   JavaScript to run this app") is `NOSCRIPT_NOTICE`.
5. No visible text at all, and a body holding scripts with a `src`: `SCRIPT_ONLY_BODY` (apps
   that create their own mount point, as Flutter and Elm do).
Anything else — a login form, an empty page, a page of short link lists — is not sent:
rendering it would show the same thing.
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING

from trawl.parse.fingerprint import MIN_PROSE_TOKENS

if TYPE_CHECKING:
    from selectolax.lexbor import LexborHTMLParser, LexborNode

SHELL_MAX_TEXT_CHARS = 400
MAX_MOUNT_TEXT_CHARS = 40
MOUNT_SELECTOR = (
    "#root, #app, #__next, #__nuxt, #___gatsby, #svelte, #react-root, #app-root,"
    " #main-app, app-root, [data-reactroot], [data-v-app], [ng-version], [ng-app]"
)
_HIDDEN_TEXT_PARENTS = frozenset({"script", "style", "noscript", "template"})


class RenderReason(Enum):
    EMPTY_MOUNT = "empty-mount"
    NOSCRIPT_NOTICE = "noscript-notice"
    SCRIPT_ONLY_BODY = "script-only-body"


def render_reason(tree: LexborHTMLParser, text_tokens: int) -> RenderReason | None:
    """Why the page in `tree` looks built by JavaScript, or None when it does not.

    `text_tokens` is the prose tokens of the page's main text (`PageOutput.text_tokens`).
    Reads `tree` only: call it before anything strips the tree."""
    if text_tokens >= MIN_PROSE_TOKENS:
        return None
    body = tree.body
    if body is None:
        return None
    visible = visible_text_chars(body, SHELL_MAX_TEXT_CHARS + 1)
    if visible > SHELL_MAX_TEXT_CHARS:
        return None
    mounts = tree.css(MOUNT_SELECTOR)
    if mounts:
        if any(_is_empty_mount(mount) for mount in mounts):
            return RenderReason.EMPTY_MOUNT
        return None  # filled on the server
    if any("javascript" in node.text().lower() for node in body.css("noscript")):
        return RenderReason.NOSCRIPT_NOTICE
    if visible == 0 and body.css_first("script[src]") is not None:
        return RenderReason.SCRIPT_ONLY_BODY
    return None


def visible_text_chars(node: LexborNode, stop_at: int) -> int:
    """Characters of text under `node` a reader sees (whitespace-stripped pieces), counted
    until `stop_at` is reached: a page past it is not a shell, however long it goes on."""
    total = 0
    for child in node.traverse(include_text=True):
        if child.tag != "-text":
            continue
        parent = child.parent
        if parent is not None and parent.tag in _HIDDEN_TEXT_PARENTS:
            continue
        total += len((child.text_content or "").strip())
        if total >= stop_at:
            break
    return total


def _is_empty_mount(mount: LexborNode) -> bool:
    return visible_text_chars(mount, MAX_MOUNT_TEXT_CHARS + 1) <= MAX_MOUNT_TEXT_CHARS
