// Whether the server accepts pages opened at this page's origin, and if not why, in words the
// person who started it can act on (GET /api/origin): a refused WebSocket handshake reaches the
// page only as a closed socket, never with its reason.

/** {allowed, reason}, or null when the server could not be asked (it is down, say). */
export async function checkOrigin(origin, fetchFn = globalThis.fetch) {
  try {
    const res = await fetchFn(`/api/origin?origin=${encodeURIComponent(origin)}`);
    return res.ok ? await res.json() : null;
  } catch {
    return null;
  }
}
