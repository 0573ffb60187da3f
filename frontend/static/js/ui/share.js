// The share dialog: the follow link with a copy button and its QR code (for a room), and for
// the driver the drive link (a second tab of your own). Links come from state/share.js.

import { shareLinks } from "../state/share.js";

async function copy(input, button) {
  input.select();
  try {
    await navigator.clipboard.writeText(input.value);
  } catch {
    document.execCommand?.("copy"); // an http page that is not localhost has no clipboard API
  }
  button.textContent = "copied";
  setTimeout(() => { button.textContent = "copy"; }, 1500);
}

/** Wire the header's Share button, the dialog's copy buttons and its close button. */
export function bindShare(doc) {
  const dialog = doc.getElementById("share");
  doc.getElementById("btn-share").addEventListener("click", () => dialog.showModal());
  doc.getElementById("share-close").addEventListener("click", () => dialog.close());
  for (const b of dialog.querySelectorAll("button[data-copy]")) {
    b.addEventListener("click", () => copy(doc.getElementById(b.dataset.copy), b));
  }
}

/** Fill the dialog for the session this page joined; the drive link only for its driver.
 * `publicUrl`: the server's public base URL, which the follow link and its QR code name. */
export function showShare(doc, { origin, publicUrl, sessionId, token }) {
  const links = shareLinks(origin, sessionId, token, publicUrl);
  doc.getElementById("btn-share").disabled = !links;
  if (!links) return;
  doc.getElementById("share-follow").value = links.follow;
  const img = doc.getElementById("share-qr");
  if (img.getAttribute("src") !== links.qr) img.src = links.qr;
  doc.getElementById("share-drive-row").hidden = !links.drive;
  doc.getElementById("share-drive").value = links.drive ?? "";
}
