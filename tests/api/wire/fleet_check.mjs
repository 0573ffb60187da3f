// Folds the fleet frames the server wrote (argv[2], JSON: {info, frames}) through the browser's
// decoder and state/fleet.js, and prints the state it ends in (rows and kept arrivals).
import { readFileSync } from "node:fs";
import { Decoder } from "../../../frontend/static/js/transport/index.js";
import { applyFleetFrame, createFleet } from "../../../frontend/static/js/state/fleet.js";

const fx = JSON.parse(readFileSync(process.argv[2], "utf8"));
const d = new Decoder();
d.decode({ type: "init", v: 1, engines: [{ fleet: fx.info }], requests: [] });
const fleet = createFleet(fx.info);
for (const text of fx.frames) applyFleetFrame(fleet, d.decode(JSON.parse(text)));
console.log(JSON.stringify({ replicas: fleet.replicas, arrivals: fleet.arrivals, time_s: fleet.time_s }));
