// Trace uploads over REST (POST /api/traces, multipart: the option fields, then `file`): the
// stored trace's description, or an UploadError carrying the server's message, the field it
// names and the HTTP status. GET /api/traces/formats lists the formats `format` may name.

import { csrfHeaders } from "./csrf.js";

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

export async function uploadTrace(url, file, options = {}, fetchFn = fetch) {
  const res = await fetchFn(url, { method: "POST", body: uploadBody(file, options),
    headers: csrfHeaders() });
  const data = await res.json().catch(() => ({}));
  if (res.ok) return data;
  const detail = typeof data.detail === "object" && data.detail ? data.detail : {};
  const message = detail.message ?? data.detail ?? data.message ?? `HTTP ${res.status}`;
  throw new UploadError(typeof message === "string" ? message : JSON.stringify(message),
    { status: res.status, field: detail.field ?? "", detail });
}

/** [{name, kind, description}] of the formats the server reads. */
export async function fetchFormats(url, fetchFn = fetch) {
  const res = await fetchFn(url);
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  return res.json();
}
