// The run's reports over REST (GET /api/sessions/{id}/overview, percentiles, diagnosis,
// timeline): the JSON answer, or an Error with the server's message (else the HTTP status).

/** The answer to a GET of `url`; `fetchFn` is the page's fetch, a fake in tests. */
export async function getJson(url, fetchFn = fetch) {
  const res = await fetchFn(url);
  if (res.ok) return res.json(); // an answer that is no JSON is an error too
  const data = await res.json().catch(() => ({}));
  throw new Error(data.detail?.message ?? `HTTP ${res.status}`);
}
