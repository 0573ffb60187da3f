import assert from "node:assert/strict";
import test from "node:test";

import {
  clampSpeed, formatScenario, nextSpeed, paceStepMs, parseScenario, sessionSpeed,
} from "../../frontend/static/js/state/url.js";

test("a scenario survives the round trip through the query string", () => {
  const s = {
    session: "a1b2c3d4e5f6a7b8c9", token: "tok-en_1", follow: true, preset: "chunked", trace: "t0123456789abcdef",
    upload_token: "upload-token-0123456", view: "compare", projection: true, pace: 4, speed: 2.5, speedAsked: true, step: 40,
    config: { max_num_batched_tokens: 512, enable_prefix_caching: false, model: "llama-3.1-8b" },
    compare: [{ policy: "vllm-v1" }, { policy: "vllm-v0" }],
  };
  assert.deepEqual(parseScenario(formatScenario(s)), s);
});

test("session, token, follow and trace are not engine flags", () => {
  const s = parseScenario("?session=abcdefabcdefabcdef&token=T1&follow=1&trace=xyz&block_size=32");
  assert.deepEqual(s.config, { block_size: 32 });
  assert.equal(s.token, "T1");
  assert.equal(s.session, "abcdefabcdefabcdef");
  assert.equal(s.follow, true);
  assert.equal(s.trace, "xyz");
});

test("a shared link carries the upload token its trace needs, and only beside a trace", () => {
  const base = parseScenario("");
  const traced = formatScenario({ ...base, trace: "abcdefabcdefabcdef", upload_token: "upload-token-0123456" });
  assert.equal(new URLSearchParams(traced).get("upload_token"), "upload-token-0123456");
  assert.equal(parseScenario(traced).upload_token, "upload-token-0123456");
  assert.equal(parseScenario(traced).config.upload_token, undefined); // not an engine flag
  const preset = formatScenario({ ...base, preset: "demo", upload_token: "upload-token-0123456" });
  assert.equal(new URLSearchParams(preset).get("upload_token"), null);
});

test("projection is a flag over the view; an older view=projection link still projects", () => {
  assert.deepEqual([parseScenario("?view=projection").view, parseScenario("?view=projection").projection], ["explore", true]);
  const s = parseScenario("?view=compare&projection=1");
  assert.equal(s.view, "compare");
  assert.equal(s.projection, true);
});

test("lesson pace is clamped to 0.5-30 steps a second", () => {
  assert.equal(parseScenario("?pace=100").pace, 30);
  assert.equal(parseScenario("?pace=0.1").pace, 0.5);
  assert.equal(parseScenario("?pace=x").pace, null);
});

test("defaults stay out of the URL", () => {
  assert.equal(formatScenario({ view: "explore", speed: 1, config: {}, compare: [] }), "");
});

test("bad values fall back to safe defaults", () => {
  const s = parseScenario("?view=<script>&speed=9999&step=1.5&compare=not-json");
  assert.equal(s.view, "explore");
  assert.equal(s.speed, 100);
  assert.equal(s.step, null);
  assert.deepEqual(s.compare, []);
});

test("compare keeps at most four object configs", () => {
  const list = JSON.stringify([{}, 1, { a: 1 }, {}, {}, {}, {}]);
  assert.equal(parseScenario(`?compare=${encodeURIComponent(list)}`).compare.length, 4);
});

test("speeds clamp to 0.1x-100x and step along the ladder", () => {
  assert.equal(clampSpeed(0), 0.1);
  assert.equal(clampSpeed(NaN), 1);
  assert.equal(nextSpeed(1, 1), 2);
  assert.equal(nextSpeed(1, -1), 0.5);
  assert.equal(nextSpeed(100, 1), 100);
  assert.equal(nextSpeed(0.1, -1), 0.1);
  assert.equal(nextSpeed(3, -1), 2);
});

test("the URL's speed is the driver's until it changes it; a follower plays at the session's", () => {
  const asked = parseScenario("?speed=5");
  assert.equal(asked.speed, 5);
  // the session's init and statuses report its own speed (1x until someone plays)
  assert.equal(sessionSpeed(asked, "driver", 1), 5);
  assert.equal(sessionSpeed(asked, "follower", 2), 2);
  const plain = parseScenario("");
  assert.equal(plain.speedAsked, undefined);
  assert.equal(sessionSpeed(plain, "driver", 2), 2); // a drive link joins the session's speed
  assert.equal(sessionSpeed(plain, "driver", undefined), 1);
  assert.equal(formatScenario({ ...asked, config: {}, compare: [] }), "?speed=5");
});

test("the URL's pace sets lesson playback's step time", () => {
  assert.equal(paceStepMs(parseScenario("?pace=10").pace), 100);
  assert.equal(paceStepMs(parseScenario("").pace), null);
});
