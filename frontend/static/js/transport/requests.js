// The session's request list over REST (GET /api/sessions/{id}/requests), page after page in
// the background after an init; a failed page is asked again with backoff, and a session that
// has gone (404) or a newer init (`current()` false) stops the loading.

export const PAGE = 10000; // the route's largest page

const sleep = (ms, setTimer) => new Promise((resolve) => setTimer(resolve, ms));

async function fetchPage(fetchFn, sessionId, offset) {
  const url = `/api/sessions/${encodeURIComponent(sessionId)}/requests?offset=${offset}&limit=${PAGE}`;
  try {
    const res = await fetchFn(url);
    if (res.status === 404) return { gone: true };
    return res.ok ? { page: await res.json() } : {};
  } catch {
    return {}; // the network: try again
  }
}

/** Calls `onPage({total, offset, requests})` for each page in order until `total` are in. */
export async function loadRequests(sessionId, total, { onPage, current },
  { fetchFn = globalThis.fetch, setTimer = setTimeout, maxFailures = 8 } = {}) {
  let offset = 0;
  let failures = 0;
  while (offset < total && current()) {
    const { page, gone } = await fetchPage(fetchFn, sessionId, offset);
    if (gone || !current()) return;
    if (!page?.requests?.length) {
      failures += 1;
      if (failures > maxFailures) return;
      await sleep(Math.min(8000, 250 * 2 ** failures), setTimer);
      continue;
    }
    failures = 0;
    onPage(page);
    offset += page.requests.length;
  }
}
