"""Issue 14's sessions in a real Chromium: two visitors of `/` get sessions of their own, a
follow link and a bare session id only watch, an unknown session gets a clear page, the share
dialog shows the follow link's QR code, and the page loads with no console error."""

from __future__ import annotations

import pytest
from pagestate import pane, wait_ready

pytestmark = pytest.mark.e2e

SESSION = ("() => ({ id: window.__servescope.store.sessionId,"
           " role: window.__servescope.store.role })")
AT = "(n) => (window.__servescope.store.panes[0]?.history.length ?? 0) >= n"


def console_errors(page):
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    return errors


def open_own(browser, server_url):
    context = browser.new_context(viewport={"width": 1500, "height": 1000})
    pg = context.new_page()
    pg.console_errors = console_errors(pg)
    pg.goto(server_url + "/")
    wait_ready(pg)
    return context, pg


def test_two_visitors_get_their_own_sessions(browser, server_url):
    (ctx_a, a), (ctx_b, b) = open_own(browser, server_url), open_own(browser, server_url)
    try:
        sa, sb = a.evaluate(SESSION), b.evaluate(SESSION)
        assert sa["id"] and sb["id"] and sa["id"] != sb["id"]
        assert sa["role"] == sb["role"] == "driver"
        a.keyboard.press("Shift+ArrowRight")
        a.wait_for_function(AT, arg=10)
        b.keyboard.press("ArrowRight")
        b.wait_for_function(AT, arg=1)
        assert pane(a)["history"] >= 10 and pane(b)["history"] == 1  # a's steps moved only a
        assert a.console_errors == [] and b.console_errors == []
    finally:
        ctx_a.close()
        ctx_b.close()


def test_follow_link_and_bare_id_cannot_drive(page, browser, server_url):
    errors = console_errors(page)
    page.goto(server_url + "/")
    wait_ready(page)
    sid = page.evaluate(SESSION)["id"]
    page.keyboard.press("Shift+ArrowRight")
    page.wait_for_function(AT, arg=10)
    driven_to = pane(page)["history"]
    token = page.input_value("#share-drive").split("token=")[1]
    assert len(token) > 20
    for query in (f"?session={sid}&follow=1", f"?session={sid}"):
        ctx = browser.new_context()
        watcher = ctx.new_page()
        watcher.goto(f"{server_url}/{query}")
        wait_ready(watcher)
        assert watcher.evaluate(SESSION) == {"id": sid, "role": "follower"}
        assert watcher.is_disabled("#btn-play") and watcher.is_disabled("#apply")
        assert token not in watcher.content()
        assert token not in watcher.evaluate("() => JSON.stringify(window.__servescope.store)")
        # a hand-made control message, past the disabled controls: refused by the server
        watcher.evaluate("() => window.__servescope.api.send({ type: 'step', n: 25 })")
        watcher.wait_for_function(
            "() => document.getElementById('error').textContent.includes('read-only')")
        ctx.close()
    page.keyboard.press("ArrowRight")  # the driver still drives, from where it was
    page.wait_for_function(AT, arg=driven_to + 1)
    assert pane(page)["history"] == driven_to + 1
    assert errors == [] and page.errors == []


def test_share_dialog_and_unknown_session_page(page, server_url):
    errors = console_errors(page)
    page.goto(server_url + "/")
    wait_ready(page)
    sid = page.evaluate(SESSION)["id"]
    page.click("#btn-share")
    follow = page.input_value("#share-follow")
    assert follow == f"{server_url}/?session={sid}&follow=1"
    assert "token=" in page.input_value("#share-drive")
    page.wait_for_function("() => document.getElementById('share-qr').naturalWidth > 100")
    page.click("#share-close")
    favicon = page.evaluate("() => fetch(document.querySelector('link[rel=icon]').href)"
                            ".then((r) => r.status)")
    assert favicon == 200
    page.goto(f"{server_url}/?session=AAAAAAAAAAAAAAAAAAAAAA")
    assert "This session is not running" in page.text_content("h1")
    assert page.errors == []
    assert [e for e in errors if "404" not in e] == []  # the unknown session's page is a 404
