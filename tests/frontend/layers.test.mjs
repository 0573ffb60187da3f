// The front end's layers: transport/ < state/ < render/ < ui/ < the entry modules (main.js,
// sweep_main.js). A module imports only from its own layer or those below it; ui/ composes
// views from render/ and state/ (transport is wired to it by an entry module); no import circle.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import test from "node:test";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../frontend/static/js/", import.meta.url));
const LAYERS = ["transport", "state", "render", "ui"];
const ENTRY = LAYERS.length; // main.js, sweep_main.js: above every layer
const UI_MAY_IMPORT = new Set(["state", "render", "ui"]);

/** The module specifiers a source imports: static imports (with or without bindings, over
 * several lines), re-exports and dynamic imports of a literal. */
function importsOf(source) {
  const patterns = [
    /^\s*import\s+(?:[\w*{}\s,$]+?\s+from\s+)?["']([^"']+)["']/gm,
    /^\s*export\s+(?:\*(?:\s+as\s+\w+)?|\{[^}]*\})\s+from\s+["']([^"']+)["']/gm,
    /\bimport\(\s*["']([^"']+)["']\s*\)/g,
  ];
  return patterns.flatMap((re) => [...source.matchAll(re)].map((m) => m[1]));
}

/** A module's layer by its path under the js root: 0-3, ENTRY, or null (no layer). */
function layerOf(rel) {
  const parts = rel.split("/");
  if (parts.length === 1) return /^(main|sweep_main)\.js$/.test(rel) ? ENTRY : null;
  const i = LAYERS.indexOf(parts[0]);
  return i >= 0 ? i : null;
}

const layerName = (rel) => (layerOf(rel) === ENTRY ? "entry" : rel.split("/")[0]);

/** {file: [imported files]} of a tree given as {path under the js root: source}; bare
 * specifiers (packages such as uplot) are left out. */
function importGraph(files) {
  const graph = {};
  for (const [rel, source] of Object.entries(files)) {
    graph[rel] = importsOf(source).filter((s) => s.startsWith("."))
      .map((s) => path.posix.normalize(path.posix.join(path.posix.dirname(rel), s)));
  }
  return graph;
}

/** Every import that breaks the layering, as "from -> to (why)". */
function violations(files) {
  const out = [];
  for (const [from, targets] of Object.entries(importGraph(files))) {
    const lf = layerOf(from);
    if (lf === null) out.push(`${from} (in no layer)`);
    for (const to of targets) {
      const lt = layerOf(to);
      if (!(to in files)) out.push(`${from} -> ${to} (no such module)`);
      else if (lt === ENTRY) out.push(`${from} -> ${to} (an entry module)`);
      else if (lf !== null && lt !== null && lt > lf) out.push(`${from} -> ${to} (upward)`);
      else if (lf === LAYERS.indexOf("ui") && !UI_MAY_IMPORT.has(layerName(to))) out.push(`${from} -> ${to} (ui/ from ${layerName(to)}/)`);
    }
  }
  return out;
}

/** The first import circle found, as a list of files (the first repeated at the end), or null. */
function circle(graph) {
  const state = new Map(); // file -> "open" while on the path, "done" after
  const trail = [];
  function visit(file) {
    if (state.get(file) === "done") return null;
    if (state.get(file) === "open") return [...trail.slice(trail.indexOf(file)), file];
    state.set(file, "open");
    trail.push(file);
    for (const to of graph[file] ?? []) {
      const found = visit(to);
      if (found) return found;
    }
    trail.pop();
    state.set(file, "done");
    return null;
  }
  for (const file of Object.keys(graph)) {
    const found = visit(file);
    if (found) return found;
  }
  return null;
}

function readTree(root) {
  const files = {};
  for (const rel of fs.readdirSync(root, { recursive: true })) {
    const posix = rel.split(path.sep).join("/");
    if (posix.endsWith(".js")) files[posix] = fs.readFileSync(path.join(root, rel), "utf8");
  }
  return files;
}

test("the parser finds static, multi-line, side-effect, re-export and dynamic imports", () => {
  const source = [
    'import { a, b } from "./a.js";',
    "import {",
    "  c,",
    '} from "../state/c.js";',
    'import * as d from "./d.js";',
    'import "./side.js";',
    'export { e } from "./e.js";',
    'export * from "./f.js";',
    'const u = (await import("uplot")).default;',
    '// import { no } from "./commented.js";  (a comment: its line does not start with import)',
    'const text = "import x from y";',
  ].join("\n");
  assert.deepEqual(importsOf(source).sort(),
    ["../state/c.js", "./a.js", "./d.js", "./e.js", "./f.js", "./side.js", "uplot"]);
});

test("a hand-made tree with upward imports, ui on transport and a circle is caught", () => {
  const files = {
    "transport/t.js": 'import { s } from "../state/s.js";', // upward
    "state/s.js": 'import { r } from "../render/r.js";', // upward
    "render/r.js": 'import { p } from "../state/p.js";',
    "state/p.js": 'import { s } from "./s.js";', // p -> s -> render/r -> p: a circle
    "ui/u.js": 'import { t } from "../transport/t.js";\nimport { r } from "../render/r.js";',
    "ui/v.js": 'const m = await import("../main.js");',
    "main.js": 'import { u } from "./ui/u.js";\nimport { t } from "./transport/t.js";',
    "stray.js": "",
  };
  assert.deepEqual(violations(files).sort(), [
    "state/s.js -> render/r.js (upward)",
    "stray.js (in no layer)",
    "transport/t.js -> state/s.js (upward)",
    "ui/u.js -> transport/t.js (ui/ from transport/)",
    "ui/v.js -> main.js (an entry module)",
  ]);
  assert.deepEqual(circle(importGraph(files)), ["state/s.js", "render/r.js", "state/p.js", "state/s.js"]);
  // the same tree made right passes
  const right = { ...files, "transport/t.js": "", "state/s.js": "", "ui/u.js": 'import "../render/r.js";',
    "ui/v.js": "" };
  delete right["stray.js"];
  assert.deepEqual(violations(right), []);
  assert.equal(circle(importGraph(right)), null);
});

test("every module of the front end imports only downward, and ui/ not from transport/", () => {
  const files = readTree(ROOT);
  assert.ok(Object.keys(files).length > 50 && "main.js" in files && "ui/keys.js" in files);
  assert.deepEqual(violations(files), []);
});

test("the front end has no import circle", () => {
  assert.equal(circle(importGraph(readTree(ROOT))), null);
});
