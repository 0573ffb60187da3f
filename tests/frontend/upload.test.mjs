import assert from "node:assert/strict";
import test from "node:test";

import {
  fetchFormats, keepUploadToken, listTraces, UPLOAD_TOKEN_KEY, UploadError, uploadBody, uploadToken, uploadTrace,
} from "../../frontend/static/js/transport/upload.js";

/** A localStorage stand-in. */
function memoryStorage() {
  const items = new Map();
  return { getItem: (k) => (items.has(k) ? items.get(k) : null), setItem: (k, v) => items.set(k, String(v)) };
}

test("the body carries the options that are not blank, trimmed, before the file", async () => {
  const file = new Blob(["{}\n"]);
  const body = uploadBody(file, { window_start_s: " 10 ", window_end_s: "", sample_n: 500, seed: 0,
    limit: null, format: undefined });
  assert.deepEqual([...body.keys()], ["window_start_s", "sample_n", "seed", "file"]);
  assert.equal(body.get("window_start_s"), "10");
  assert.equal(body.get("sample_n"), "500");
  assert.equal(body.get("seed"), "0"); // 0 is a value, not a blank
  assert.equal(await body.get("file").text(), "{}\n");
});

test("an upload the server refuses throws its message, the field it names and the status", async () => {
  const refuse = async () => ({ ok: false, status: 400,
    json: async () => ({ detail: { message: "window_end_s (2) must not be before window_start_s (5)", line: 0, field: "window_end_s" } }) });
  await assert.rejects(uploadTrace("/api/traces", new Blob(["x"]), { window_start_s: 5 }, refuse), (err) => {
    assert.ok(err instanceof UploadError);
    assert.equal(err.status, 400);
    assert.equal(err.field, "window_end_s");
    assert.match(err.message, /must not be before/);
    return true;
  });
  const tooMany = async () => ({ ok: false, status: 413,
    json: async () => ({ detail: { message: "30 requests", field: "", num_requests: 30, max_requests: 20 } }) });
  await assert.rejects(uploadTrace("/api/traces", new Blob(["x"]), {}, tooMany),
    (err) => err.status === 413 && err.detail.max_requests === 20 && err.field === "");
  const plain = async () => ({ ok: false, status: 502, json: async () => { throw new SyntaxError("not JSON"); } });
  await assert.rejects(uploadTrace("/api/traces", new Blob(["x"]), {}, plain), /HTTP 502/);
  const flat = async () => ({ ok: false, status: 501, json: async () => ({ detail: "needs msgpack" }) });
  await assert.rejects(uploadTrace("/api/traces", new Blob(["x"]), {}, flat), /needs msgpack/);
});

test("an accepted upload returns the stored trace; the options go in the same request", async () => {
  let sent = null;
  const accept = async (url, init) => {
    sent = { url, method: init.method, body: init.body };
    return { ok: true, status: 201, json: async () => ({ trace_id: "t9" }) };
  };
  assert.deepEqual(await uploadTrace("/api/traces", new Blob(["x"]), { limit: 3 }, accept), { trace_id: "t9" });
  assert.equal(sent.url, "/api/traces");
  assert.equal(sent.method, "POST");
  assert.equal(sent.body.get("limit"), "3");
  assert.ok(sent.body.has("file"));
});

test("the formats list, or an Error naming the URL", async () => {
  const ok = async () => ({ ok: true, json: async () => [{ name: "azure", kind: "requests" }] });
  assert.deepEqual(await fetchFormats("/api/traces/formats", ok), [{ name: "azure", kind: "requests" }]);
  const down = async () => ({ ok: false, status: 503 });
  await assert.rejects(fetchFormats("/api/traces/formats", down), /\/api\/traces\/formats: HTTP 503/);
});

test("writes echo the page's CSRF cookie in X-CSRF-Token", async () => {
  const { csrfHeaders } = await import("../../frontend/static/js/transport/csrf.js");
  assert.deepEqual(csrfHeaders("a=1; servescope_csrf=tok-en=; b=2"), { "X-CSRF-Token": "tok-en=" });
  assert.deepEqual(csrfHeaders("a=1"), {});
  assert.deepEqual(csrfHeaders(""), {});
});

test("the first upload keeps the token the server answers; later ones and listings present it", async () => {
  const storage = memoryStorage();
  const sent = [];
  const server = async (url, init = {}) => {
    sent.push({ url, token: init.headers?.["X-Upload-Token"] ?? null });
    return { ok: true, status: 201, json: async () => ({ trace_id: "t1", upload_token: init.headers?.["X-Upload-Token"] ?? "minted-token-00000001" }) };
  };
  await uploadTrace("/api/traces", new Blob(["x"]), {}, server, storage);
  assert.equal(sent[0].token, null); // none kept yet: the server makes one
  assert.equal(uploadToken(storage), "minted-token-00000001");
  await uploadTrace("/api/traces", new Blob(["y"]), {}, server, storage);
  assert.equal(sent[1].token, "minted-token-00000001");
  await listTraces("/api/traces", uploadToken(storage), server);
  assert.deepEqual(sent[2], { url: "/api/traces", token: "minted-token-00000001" });
});

test("without a token there is nothing to list, and a storage that refuses keeps nothing", async () => {
  assert.deepEqual(await listTraces("/api/traces", null, async () => assert.fail("no request")), []);
  const refusing = { getItem: () => { throw new Error("denied"); }, setItem: () => { throw new Error("denied"); } };
  keepUploadToken("some-token-0000000001", refusing);
  assert.equal(uploadToken(refusing), null);
  const storage = memoryStorage();
  keepUploadToken("some-token-0000000001", storage);
  assert.equal(storage.getItem(UPLOAD_TOKEN_KEY), "some-token-0000000001");
});
