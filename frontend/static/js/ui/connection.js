// The header's connection word, and when the server refuses this page's socket the reason in a
// banner above the page, in the server's words (how to start it so that it accepts this page):
// a teacher who opened the page by the machine's LAN address must not be left at "disconnected".
// A socket the server closed for a message over its limit (1009) says so while the page
// reconnects (transport/socket.js rejoins the session with its token).

const MESSAGE_TOO_BIG = 1009; // RFC 6455: the server's message limit (cli/serve.py ws_max_size)

/** The header's word after the socket closed with `code`. */
export function closedWord(code) {
  return code === MESSAGE_TOO_BIG
    ? "reconnecting: the last message was over the server's size limit"
    : "disconnected";
}

export class ConnectionLine {
  /** `origin`: this page's (location.origin); `check(origin)`: transport/origin.js's checkOrigin,
   * handed in by the entry module (ui/ does no transport). */
  constructor(doc, { origin, follow, check }) {
    Object.assign(this, { doc, origin, follow, check });
    this.generation = 0; // bumps on every open and close: an older check's answer is dropped
  }

  setWord(text) {
    const el = this.doc.getElementById("conn");
    if (el.textContent !== text) el.textContent = text;
  }

  opened() {
    this.generation += 1;
    this.setWord(this.follow ? "following (read-only)" : "connected");
    this.doc.getElementById("refused").hidden = true;
  }

  /** Asks the server why, once a close (`event`: the socket's close event); the banner stays
   * until a socket opens. */
  async closed(event) {
    const mine = ++this.generation;
    this.setWord(closedWord(event?.code));
    const answer = await this.check(this.origin);
    if (mine !== this.generation || answer?.allowed !== false) return;
    this.setWord("refused");
    const banner = this.doc.getElementById("refused");
    banner.textContent = answer.reason;
    banner.hidden = false;
  }
}
