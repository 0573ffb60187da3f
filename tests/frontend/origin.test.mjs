import { test } from "node:test";
import assert from "node:assert/strict";
import { checkOrigin } from "../../frontend/static/js/transport/origin.js";

const answering = (status, body, asked = []) => async (url) => {
  asked.push(url);
  return { ok: status < 400, status, json: async () => body };
};

test("asks the server about this page's own origin and hands its answer on", async () => {
  const asked = [];
  const body = { allowed: false, reason: "This server does not accept pages opened at http://10.0.0.5:8000" };
  assert.deepEqual(await checkOrigin("http://10.0.0.5:8000", answering(200, body, asked)), body);
  assert.deepEqual(asked, ["/api/origin?origin=http%3A%2F%2F10.0.0.5%3A8000"]);
});

test("a server that cannot be asked gives no answer, not a refusal", async () => {
  assert.equal(await checkOrigin("http://h", answering(500, {})), null);
  assert.equal(await checkOrigin("http://h", async () => { throw new TypeError("network"); }), null);
});
