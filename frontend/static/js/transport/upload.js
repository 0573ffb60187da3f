// Trace uploads over REST (POST /api/traces, multipart field `file`): the stored trace's
// description, or an Error whose message is the server's own.

export async function uploadTrace(url, file, fetchFn = fetch) {
  const body = new FormData();
  body.append("file", file);
  const res = await fetchFn(url, { method: "POST", body });
  const data = await res.json().catch(() => ({}));
  if (res.ok) return data;
  const detail = data.detail?.message ?? data.detail ?? data.message ?? `HTTP ${res.status}`;
  throw new Error(typeof detail === "string" ? detail : JSON.stringify(detail));
}
