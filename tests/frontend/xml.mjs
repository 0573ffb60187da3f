// A small strict XML parser for tests: the XML declaration, elements, attributes, text,
// comments and the predefined and numeric entities; anything not well-formed throws.

const NAME = /[A-Za-z_][\w.:-]*/y;
const NAMED = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };

function decode(raw, fail) {
  if (raw.includes("<")) fail("a raw '<' in text or a value");
  return raw.replace(/&([^;\s&]*);?/g, (m, ent) => {
    if (!m.endsWith(";")) fail(`an unterminated entity ${m}`);
    if (ent in NAMED) return NAMED[ent];
    const code = /^#x[0-9a-f]+$/i.test(ent) ? parseInt(ent.slice(2), 16)
      : /^#\d+$/.test(ent) ? Number(ent.slice(1)) : fail(`an unknown entity &${ent};`);
    return String.fromCodePoint(code);
  });
}

class Reader {
  constructor(src) { this.src = src; this.i = 0; }

  fail(msg) { throw new Error(`not well-formed XML: ${msg} at offset ${this.i}`); }

  ws() { while (this.i < this.src.length && " \t\r\n".includes(this.src[this.i])) this.i += 1; }

  expect(s) {
    if (!this.src.startsWith(s, this.i)) this.fail(`expected ${s}`);
    this.i += s.length;
  }

  name() {
    NAME.lastIndex = this.i;
    const m = NAME.exec(this.src);
    if (!m) this.fail("expected a name");
    this.i = NAME.lastIndex;
    return m[0];
  }

  skipTo(end, what) {
    const at = this.src.indexOf(end, this.i);
    if (at < 0) this.fail(`an unterminated ${what}`);
    this.i = at + end.length;
  }

  misc() {
    for (this.ws(); this.src.startsWith("<!--", this.i); this.ws()) this.skipTo("-->", "comment");
  }

  attribute(attrs) {
    const key = this.name();
    if (key in attrs) this.fail(`a repeated attribute ${key}`);
    this.ws(); this.expect("="); this.ws();
    const quote = this.src[this.i];
    if (quote !== '"' && quote !== "'") this.fail("an unquoted attribute value");
    const start = this.i + 1;
    this.i = start;
    this.skipTo(quote, "attribute value");
    attrs[key] = decode(this.src.slice(start, this.i - 1), (m) => this.fail(m));
  }

  /** The start tag; true when it closes itself (`<a/>`). */
  startTag(node) {
    for (;;) {
      const before = this.i;
      this.ws();
      if (this.src.startsWith("/>", this.i)) { this.i += 2; return true; }
      if (this.src[this.i] === ">") { this.i += 1; return false; }
      if (this.i === before) this.fail("expected white space before an attribute");
      this.attribute(node.attrs);
    }
  }

  element() {
    this.expect("<");
    const node = { name: this.name(), attrs: {}, children: [], text: "" };
    if (this.startTag(node)) return node;
    for (;;) {
      if (this.i >= this.src.length) this.fail(`an unclosed <${node.name}>`);
      if (this.src.startsWith("</", this.i)) {
        this.i += 2;
        if (this.name() !== node.name) this.fail(`a mismatched end tag for <${node.name}>`);
        this.ws(); this.expect(">");
        return node;
      }
      if (this.src.startsWith("<!--", this.i)) this.misc();
      else if (this.src[this.i] === "<") node.children.push(this.element());
      else {
        const end = this.src.indexOf("<", this.i);
        const stop = end < 0 ? this.src.length : end;
        node.text += decode(this.src.slice(this.i, stop), (m) => this.fail(m));
        this.i = stop;
      }
    }
  }
}

/** The document's root element: {name, attrs, children (elements), text (its own text)}. */
export function parseXml(src) {
  const r = new Reader(src);
  if (src.startsWith("<?xml")) r.skipTo("?>", "declaration");
  r.misc();
  const root = r.element();
  r.misc();
  if (r.i !== src.length) r.fail("content after the root element");
  return root;
}

/** Every element named `name` under `node` (itself included), in document order. */
export function findAll(node, name) {
  const out = node.name === name ? [node] : [];
  for (const c of node.children) out.push(...findAll(c, name));
  return out;
}
