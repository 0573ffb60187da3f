// Trace uploads over REST (POST /api/traces, multipart: the option fields, then `file`): the
// stored trace's description, or an UploadError carrying the server's message, the field it
// names and the HTTP status. GET /api/traces/formats lists the formats `format` may name.
// An upload is private to the browser that made it: the server answers an `upload_token`, which
// this browser keeps (localStorage) and presents as X-Upload-Token with its later uploads and
// listings, and which a configure names beside the trace (api/uploads/owner.py).

import { csrfHeaders } from "./csrf.js";

export const UPLOAD_TOKEN_KEY = "servescope.upload_token";
export const UPLOAD_TOKEN_HEADER = "X-Upload-Token";

/** The upload token this browser keeps, or null (none yet, or no storage). */
export function uploadToken(storage = globalThis.localStorage) {
  try {
    return storage?.getItem(UPLOAD_TOKEN_KEY) ?? null;
  } catch {
    return null; // storage refused (a private window's policy): uploads still work, unkept
  }
}

/** Keep `token` as this browser's upload token. */
export function keepUploadToken(token, storage = globalThis.localStorage) {
  try {
    if (token) storage?.setItem(UPLOAD_TOKEN_KEY, token);
  } catch {
    // not kept: the next upload gets a new token, and this one stays in the page's scenario
  }
}

/** {"X-Upload-Token": token}, or {} without one. */
export const uploadHeaders = (token) => (token ? { [UPLOAD_TOKEN_HEADER]: token } : {});

export class UploadError extends Error {
  constructor(message, { status = 0, field = "", detail = {} } = {}) {
    super(message);
    this.status = status;
    this.field = field;
    this.detail = detail;
  }
}

/** The multipart body: each option that is not blank (as text, trimmed), then the file. */
export function uploadBody(file, options = {}) {
  const body = new FormData();
  for (const [name, value] of Object.entries(options)) {
    const text = value == null ? "" : String(value).trim();
    if (text) body.append(name, text);
  }
  body.append("file", file);
  return body;
}

/** Upload as this browser (its kept token, or a new one the answer carries, then kept). */
export async function uploadTrace(url, file, options = {}, fetchFn = fetch, storage = globalThis.localStorage) {
  const res = await fetchFn(url, { method: "POST", body: uploadBody(file, options),
    headers: { ...csrfHeaders(), ...uploadHeaders(uploadToken(storage)) } });
  const data = await res.json().catch(() => ({}));
  if (res.ok) {
    keepUploadToken(data.upload_token, storage);
    return data;
  }
  const detail = typeof data.detail === "object" && data.detail ? data.detail : {};
  const message = detail.message ?? data.detail ?? data.message ?? `HTTP ${res.status}`;
  throw new UploadError(typeof message === "string" ? message : JSON.stringify(message),
    { status: res.status, field: detail.field ?? "", detail });
}

/** This browser's uploads (GET /api/traces with `token`): [{trace_id, filename, kind, ...}]. */
export async function listTraces(url, token, fetchFn = fetch) {
  if (!token) return [];
  const res = await fetchFn(url, { headers: uploadHeaders(token) });
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  return res.json();
}

/** [{name, kind, description}] of the formats the server reads. */
export async function fetchFormats(url, fetchFn = fetch) {
  const res = await fetchFn(url);
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  return res.json();
}
