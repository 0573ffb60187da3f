import assert from "node:assert/strict";
import test from "node:test";

import {
  changesEngines, configureMessage, joinPlan, paneConfigs, paneLabels,
} from "../../frontend/static/js/ui/compare_mode.js";
import { drivesSession, lockControls, DRIVING_CONTROLS } from "../../frontend/static/js/ui/controls.js";
import { actionForKey } from "../../frontend/static/js/ui/keys.js";

const scenario = (fields = {}) => ({ view: "explore", config: {}, compare: [], preset: "demo", ...fields });

test("compare runs the URL's configs over the page's config, else the lesson's four modes", () => {
  const s = scenario({ view: "compare", config: { block_size: 32 }, compare: [{ policy: "static" }, { policy: "naive" }] });
  assert.deepEqual(paneConfigs(s), [{ block_size: 32, policy: "static" }, { block_size: 32, policy: "naive" }]);
  assert.deepEqual(paneConfigs(scenario({ view: "compare" })),
    [{ policy: "naive" }, { policy: "static" }, { policy: "vllm-v0" }, { policy: "vllm-v1", enable_chunked_prefill: true }]);
  assert.deepEqual(configureMessage(scenario({ config: { max_num_seqs: 4 } }), { preset: "demo" }),
    { type: "configure", config: { max_num_seqs: 4 }, workload: { preset: "demo" } });
  assert.equal(configureMessage(s, { preset: "demo" }).configs.length, 2);
});

test("panes are labelled by the page's configs only when they are what the session runs", () => {
  const s = scenario({ view: "compare", compare: [{ policy: "static" }, { policy: "naive", block_size: 8 }] });
  assert.deepEqual(paneLabels(s, [{}, {}]), ["static batching", "policy=naive, block_size=8"]);
  assert.deepEqual(paneLabels(scenario({ view: "compare" }), [{}, {}, {}, {}]), ["naive", "static batching",
    "continuous batching, no chunking", "continuous batching + chunked prefill"]);
  const variants = [{ name: "paged 16", config: { allocator: "paged" } }];
  assert.deepEqual(paneLabels(scenario({ view: "compare", compare: [{ allocator: "paged" }, {}] }), [{}, {}], variants),
    ["paged 16", "defaults"]);
  assert.deepEqual(paneLabels(s, [{ label: "a" }, { label: "b" }, { label: "c" }]), ["a", "b", "c"]);
});

test("a follower follows the session's engine count and never configures", () => {
  const two = { role: "follower", engines: [{}, {}] };
  assert.deepEqual(joinPlan(two, scenario(), { first: true }), { view: "compare", configure: false });
  assert.deepEqual(joinPlan({ role: "follower", engines: [{}] }, scenario({ view: "compare" }), { first: false }),
    { view: "explore", configure: false });
});

test("a driver configures once, when its URL asks for something else than the session runs", () => {
  const init = { role: "driver", engines: [{}], preset: "demo" };
  assert.equal(joinPlan(init, scenario(), { first: true }).configure, false);
  assert.equal(joinPlan(init, scenario({ config: { block_size: 8 } }), { first: true }).configure, true);
  assert.equal(joinPlan(init, scenario({ trace: "abc" }), { first: true }).configure, true);
  assert.equal(joinPlan(init, scenario({ trace: "abc" }), { first: false }).configure, false);
  // a drive link (session and token, no preset) shows the session's own workload
  const kv = { ...init, preset: "kv-starvation" };
  assert.equal(joinPlan(kv, scenario({ session: "s1" }), { first: true, presetAsked: false }).configure, false);
  assert.equal(joinPlan(kv, scenario({ session: "s1" }), { first: true, presetAsked: true }).configure, true);
  assert.equal(joinPlan(kv, scenario(), { first: true, presetAsked: false }).configure, true);
  // joining someone's compare session by its id shows it as a compare
  assert.deepEqual(joinPlan({ ...init, engines: [{}, {}] }, scenario({ session: "s1" }), { first: true }),
    { view: "compare", configure: false });
  assert.equal(changesEngines("explore", "compare") && !changesEngines("explore", "projection"), true);
});

test("a follower's keys change its own view but never drive the session", () => {
  for (const key of [" ", "ArrowRight", "ArrowLeft", "Home", "End", "+", "1"]) {
    assert.equal(drivesSession(actionForKey({ key })), true, key);
  }
  for (const key of ["c", "p", "Escape"]) assert.equal(drivesSession(actionForKey({ key })), false, key);
});

test("locking disables every driving control, the lesson bar's too, and unlocking puts the titles back", () => {
  const els = Object.fromEntries(DRIVING_CONTROLS.map((id) => [id, { disabled: false, title: `t-${id}`, dataset: {} }]));
  const bar = ["btn-tour", "btn-lesson", "next-h"].map((id) => ({ disabled: false, title: `t-${id}`, dataset: {} }));
  const doc = { getElementById: (id) => els[id], querySelectorAll: (sel) => (/#lesson-bar button/.test(sel) ? bar : []) };
  lockControls(doc, true);
  const all = [...Object.values(els), ...bar];
  assert.ok(all.every((el) => el.disabled && /following read-only/.test(el.title)));
  lockControls(doc, false);
  assert.ok(Object.values(els).every((el, i) => !el.disabled && el.title === `t-${DRIVING_CONTROLS[i]}`));
  assert.deepEqual(bar.map((el) => [el.disabled, el.title]), [[false, "t-btn-tour"], [false, "t-btn-lesson"], [false, "t-next-h"]]);
});

test("a compare's configure names its panes, and a follower's panes take the session's names", () => {
  const s = scenario({ view: "compare" });
  assert.deepEqual(configureMessage(s, { preset: "demo" }).labels, ["naive", "static batching",
    "continuous batching, no chunking", "continuous batching + chunked prefill"]);
  const long = scenario({ view: "compare", compare: [{ model: "x".repeat(200) }, {}] });
  assert.equal(configureMessage(long, { preset: "demo" }).labels[0].length, 120);
  const engines = [{ label: "naive" }, { label: "static batching" }];
  // a follow link's page is in explore with no compare list of its own
  assert.deepEqual(paneLabels(scenario(), engines, undefined, "follower"), ["naive", "static batching"]);
  assert.deepEqual(paneLabels(scenario({ view: "compare" }), [{ label: "policy=naive" }, { label: "b" }, {}, {}],
    undefined, "follower"), ["policy=naive", "b", "", ""]);
});

test("a driver joining a live session never configures it: its engine is the endpoint's", () => {
  const live = { role: "driver", source: "live", engines: [{}] };
  assert.equal(joinPlan(live, scenario({ session: "s1", config: { block_size: 8 } }), { first: true }).configure, false);
  assert.equal(joinPlan({ ...live, source: "simulated" }, scenario({ session: "s1", config: { block_size: 8 } }),
    { first: true }).configure, true);
});

test("a P/D pane runs without the page's async_scheduling (its pools schedule synchronously)", () => {
  const pd = { prefill: { replicas: 1 }, decode: { replicas: 1 } };
  const s = scenario({ view: "compare", config: { async_scheduling: true, max_num_seqs: 8 }, compare: [{}, pd] });
  assert.deepEqual(paneConfigs(s), [{ async_scheduling: true, max_num_seqs: 8 }, { max_num_seqs: 8, ...pd }]);
});
