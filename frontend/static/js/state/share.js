// The links a session can be shared by: the follow link (read-only, no token: for a room) and
// the drive link (with the driver token: for a second tab of the same person). Pure.
// The follow link names the server's public address (boot.public_url: the room's way in, which
// `servescope serve --classroom` detects or is told), not the host this page was opened by: a
// teacher on http://localhost must still hand the room a link it can open.

/** {follow, drive (null without a token), qr (the follow link's QR code, an SVG URL)}. */
export function shareLinks(origin, sessionId, token, publicUrl = null) {
  if (!sessionId || sessionId === "new") return null;
  const id = encodeURIComponent(sessionId);
  return {
    follow: `${publicUrl ?? origin}/?session=${id}&follow=1`,
    drive: token ? `${origin}/?session=${id}&token=${encodeURIComponent(token)}` : null,
    qr: `/api/sessions/${id}/follow-qr.svg`,
  };
}

/** The socket path that rejoins a session as its driver (after a reconnect, say). */
export const drivePath = (sessionId, token) =>
  `/ws/sessions/${encodeURIComponent(sessionId)}?token=${encodeURIComponent(token)}`;
