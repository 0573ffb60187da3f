// The sweep routes: start a sweep (POST /api/sweeps), read its progress, cancel it (both with
// the token the start answered, X-Sweep-Token). Errors carry the server's message and field.

import { csrfHeaders } from "./csrf.js";

async function call(method, url, body, token) {
  const res = await fetch(url, {
    method, headers: { ...csrfHeaders(), ...(body ? { "content-type": "application/json" } : {}),
      ...(token ? { "x-sweep-token": token } : {}) },
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

export const startSweep = (body) => call("POST", "/api/sweeps", body);
export const readSweep = (id, token) => call("GET", `/api/sweeps/${encodeURIComponent(id)}`, null, token);
export const cancelSweep = (id, token) => call("DELETE", `/api/sweeps/${encodeURIComponent(id)}`, null, token);
