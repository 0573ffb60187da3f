import { test } from "node:test";
import assert from "node:assert/strict";
import { drivePath, shareLinks } from "../../frontend/static/js/state/share.js";

test("the follow link carries no token; the drive link does", () => {
  const l = shareLinks("http://h:1", "abc", "t0k/+");
  assert.equal(l.follow, "http://h:1/?session=abc&follow=1");
  assert.ok(!l.follow.includes("t0k"));
  assert.equal(l.drive, "http://h:1/?session=abc&token=t0k%2F%2B");
  assert.equal(l.qr, "/api/sessions/abc/follow-qr.svg");
});

test("a follower has no drive link, and an unjoined page no links", () => {
  assert.equal(shareLinks("http://h", "abc", null).drive, null);
  assert.equal(shareLinks("http://h", "new", "t"), null);
  assert.equal(shareLinks("http://h", null, "t"), null);
});

test("the driver's rejoin path names the session and its token", () => {
  assert.equal(drivePath("a b", "x&y"), "/ws/sessions/a%20b?token=x%26y");
});

test("the follow link names the server's public address; the drive link this page's", () => {
  const l = shareLinks("http://localhost:8000", "abc", "t", "http://192.168.1.20:8000");
  assert.equal(l.follow, "http://192.168.1.20:8000/?session=abc&follow=1");
  assert.equal(l.drive, "http://localhost:8000/?session=abc&token=t");
  assert.equal(shareLinks("http://h:1", "abc", null, undefined).follow, "http://h:1/?session=abc&follow=1");
});
