// The sweep routes: start a sweep (POST /api/sweeps), read its progress, cancel it (both with
// the token the start answered, X-Sweep-Token). Errors carry the server's message and field.

import { csrfHeaders } from "./csrf.js";
import { uploadHeaders } from "./upload.js";

async function call(method, url, body, headers = {}) {
  const res = await fetch(url, {
    method, headers: { ...csrfHeaders(), ...headers, ...(body ? { "content-type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const data = await res.json().catch(() => ({}));
  if (!res.ok) {
    const detail = data.detail ?? {};
    const err = new Error(typeof detail === "string" ? detail : detail.message ?? `HTTP ${res.status}`);
    err.field = detail.field ?? (Array.isArray(detail) ? detail[0]?.loc?.slice(1).join(".") : null);
    throw err;
  }
  return data;
}

const sweepHeaders = (token) => (token ? { "x-sweep-token": token } : {});

/** `uploadToken`: the upload token whose trace the sweep names (none for a preset). */
export const startSweep = (body, uploadToken = null) => call("POST", "/api/sweeps", body, uploadHeaders(uploadToken));
/** `token`: the sweep's own, as its start answered. */
export const readSweep = (id, token) => call("GET", `/api/sweeps/${encodeURIComponent(id)}`, null, sweepHeaders(token));
export const cancelSweep = (id, token) => call("DELETE", `/api/sweeps/${encodeURIComponent(id)}`, null, sweepHeaders(token));
