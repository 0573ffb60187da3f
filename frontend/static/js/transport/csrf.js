// The CSRF token for the server's writes: the page's SameSite=Strict cookie `servescope_csrf`,
// echoed in the X-CSRF-Token header (another site can neither read the cookie nor set the
// header). Empty where there is no document (node tests) or no cookie.

export const CSRF_COOKIE = "servescope_csrf";

/** Headers to add to a POST/DELETE fetch: {"X-CSRF-Token": token}, or {} without a cookie. */
export function csrfHeaders(cookie = globalThis.document?.cookie ?? "") {
  for (const part of cookie.split(";")) {
    const [name, ...value] = part.trim().split("=");
    if (name === CSRF_COOKIE && value.length) return { "X-CSRF-Token": value.join("=") };
  }
  return {};
}
