"""A classroom on a LAN, with 127.0.0.2 standing in for the machine's LAN address (tests reach
only loopback): `servescope serve --classroom --public-address 127.0.0.2` as a teacher starts
it, the page opened by that address, its follow link and QR code naming it, a follower playing
through that link; a page by a name the server does not serve told why in large type, and a
foreign page's socket still refused."""

from __future__ import annotations

import http.server
import io
import threading

import pytest
import segno
from pagestate import pane, wait_history, wait_ready
from support.server import Server

PUBLIC = "127.0.0.2"
ELSEWHERE = "127.0.0.3"  # a name this server does not serve, and a foreign page's host
SESSION = "() => { const s = window.__servescope.store; return { id: s.sessionId, role: s.role }; }"


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    """The classroom command exactly (all interfaces), reached at the public address."""
    server = Server(tmp_path_factory.mktemp("classroom") / "data", "--classroom",
                    "--public-address", PUBLIC, address=PUBLIC)
    yield server
    server.stop()


def qr_svg(url: str) -> bytes:
    """The follow-qr.svg route's rendering of `url` (api/routes/pages.py)."""
    out = io.BytesIO()
    segno.make(url, error="m").save(out, kind="svg", scale=6, border=2, xmldecl=False,
                                    dark="#000", light="#fff")
    return out.getvalue()


def share_links(page) -> tuple[str, str]:
    page.click("#btn-share")
    follow, qr = page.input_value("#share-follow"), page.get_attribute("#share-qr", "src")
    page.click("#share-close")
    return follow, qr


def test_a_room_follows_the_qr_codes_link_and_sees_it_play(room, page, browser):
    page.goto(f"http://{PUBLIC}:{room.port}/")
    wait_ready(page)
    sid = page.evaluate(SESSION)["id"]
    follow, qr = share_links(page)
    assert follow == f"http://{PUBLIC}:{room.port}/?session={sid}&follow=1"
    assert page.request.get(f"http://{PUBLIC}:{room.port}{qr}").body() == qr_svg(follow)

    ctx = browser.new_context()
    try:
        student = ctx.new_page()
        student.goto(follow)
        wait_ready(student)
        assert student.evaluate(SESSION) == {"id": sid, "role": "follower"}
        assert student.text_content("#conn").startswith("following (read-only)")
        start = pane(student)["history"]
        page.click("#btn-play")
        wait_history(student, start + 10)
        assert pane(student)["playing"] and student.is_hidden("#refused")
    finally:
        ctx.close()
    assert page.errors == []


def test_a_teacher_on_loopback_still_hands_out_the_public_address(room, page):
    page.goto(f"http://127.0.0.1:{room.port}/")
    wait_ready(page)
    follow, _ = share_links(page)
    assert follow.startswith(f"http://{PUBLIC}:{room.port}/?session=")


def test_a_page_by_a_name_not_served_says_why_in_large_type(room, page, screenshots):
    page.goto(f"http://{ELSEWHERE}:{room.port}/")
    banner = page.wait_for_selector("#refused", state="visible", timeout=15000)
    text = banner.text_content()
    assert text.startswith(f"This server does not accept pages opened at "
                           f"http://{ELSEWHERE}:{room.port} — open http://{PUBLIC}:{room.port}/")
    assert f"--public-address {ELSEWHERE}" in text and "SERVESCOPE_SERVER_NAMES" in text
    assert page.text_content("#conn") == "refused"
    size = page.evaluate("() => parseFloat(getComputedStyle(document.getElementById('refused'))"
                         ".fontSize) / parseFloat(getComputedStyle(document.body).fontSize)")
    box = banner.bounding_box()
    assert size >= 1.3 and box["y"] < 150  # larger than the page's text, at its top
    page.screenshot(path=screenshots / "classroom-refused.png")


FOREIGN = """<!doctype html><script>
window.result = "pending";
const ws = new WebSocket("ws://%s/ws/sessions/new");
ws.onopen = () => { window.result = "opened"; };
ws.onclose = (ev) => { if (window.result === "pending") window.result = "refused " + ev.code; };
</script>"""


@pytest.fixture
def foreign_site(room):
    """Another site's page, on 127.0.0.3, that tries to drive the classroom server."""
    body = (FOREIGN % f"{PUBLIC}:{room.port}").encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer((ELSEWHERE, 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://{ELSEWHERE}:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


def test_a_foreign_pages_socket_is_still_refused(room, page, foreign_site):
    sessions = room.get("/healthz")["sessions"]
    page.goto(foreign_site)
    page.wait_for_function("() => window.result !== 'pending'", timeout=15000)
    assert page.evaluate("() => window.result").startswith("refused")
    assert room.get("/healthz")["sessions"] == sessions  # it made no session
