import assert from "node:assert/strict";
import test from "node:test";

import { getJson } from "../../frontend/static/js/transport/reports.js";

const answer = (status, body) => async () => new Response(body, { status });

test("a report's JSON, or the server's message, or the HTTP status", async () => {
  assert.deepEqual(await getJson("/r", answer(200, '{"rows": null}')), { rows: null });
  await assert.rejects(getJson("/r", answer(422, '{"detail": {"message": "end_s: after start_s"}}')),
    { message: "end_s: after start_s" });
  await assert.rejects(getJson("/r", answer(502, "<html>bad gateway</html>")), { message: "HTTP 502" });
  await assert.rejects(getJson("/r", answer(200, "<html>")), SyntaxError);
});
