// The sweep routes: start a sweep (POST /api/sweeps), read its progress, cancel it. Errors
// carry the server's message and field.

import { csrfHeaders } from "./csrf.js";
import { uploadHeaders } from "./upload.js";

async function call(method, url, body, token = null) {
  const res = await fetch(url, {
    method, headers: { ...csrfHeaders(), ...uploadHeaders(token), ...(body ? { "content-type": "application/json" } : {}) },
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

/** `token`: the upload token whose trace the sweep names (none for a preset). */
export const startSweep = (body, token = null) => call("POST", "/api/sweeps", body, token);
export const readSweep = (id) => call("GET", `/api/sweeps/${encodeURIComponent(id)}`);
export const cancelSweep = (id) => call("DELETE", `/api/sweeps/${encodeURIComponent(id)}`);
