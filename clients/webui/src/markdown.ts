// A small sanitizing Markdown renderer: it builds DOM nodes directly
// (headings, paragraphs, lists, block quotes, fenced code, inline code,
// emphasis, links), never HTML text. Raw HTML in the source stays visible
// as text; links keep only http(s) and mailto targets; images are shown as
// their alt text (nothing is fetched).
//
// Its cost is linear in the input: blocks are found by anchored patterns
// tried once per line, and each line's inline markup by a left-to-right
// scanner (no regular expression that can backtrack) whose look-ups for a
// closing delimiter only ever move forwards. Nesting is bounded (quotes,
// and inline markup inside inline markup), and text longer than plainAbove
// is shown as plain text.

import { append, h, type Child } from "./dom.js";

/** plainAbove is the length (UTF-16 units) above which a text is shown plain, without Markdown. */
export const plainAbove = 100_000;
/** maxQuoteDepth bounds nested block quotes; deeper markers stay text. */
const maxQuoteDepth = 8;
/** maxInlineDepth bounds inline markup nested inside inline markup. */
const maxInlineDepth = 4;

/**
 * work counts the characters the parser reads (each line once per block
 * pattern tried on it, each character the inline scanner visits or skips,
 * each character a look-ahead searches): a measure of its cost that a
 * loaded machine does not blur. The unit tests hold it to linear growth.
 */
export const work = { reads: 0 };

/** Inline is a run of text or inline markup. */
export type Inline =
  | string
  | { t: "code"; text: string }
  | { t: "img"; alt: string }
  | { t: "a"; href: string; kids: Inline[] }
  | { t: "strong" | "em"; kids: Inline[] };

/** Block is a block of a Markdown document. */
export type Block =
  | { t: "pre"; lang: string; text: string }
  | { t: "h"; level: number; kids: Inline[] }
  | { t: "list"; ordered: boolean; items: Inline[][] }
  | { t: "quote"; blocks: Block[] }
  | { t: "p"; lines: Inline[][] };

const fenceRe = /^\s*(```|~~~)(.*)$/;
const headingRe = /^(#{1,6})\s+(.*)$/;
const itemRe = /^\s*([-*+]|\d+[.)])\s+/;
const quoteRe = /^\s*>/;
const paraEndRe = /^(#{1,6}\s|\s*```|\s*~~~|\s*>|\s*([-*+]|\d+[.)])\s)/;

/** parseMarkdown parses md into blocks; it uses no DOM. */
export function parseMarkdown(md: string, depth = 0): Block[] {
  const out: Block[] = [];
  const lines = md.replace(/\r\n?/g, "\n").split("\n");
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    work.reads += 5 * (line.length + 1); // at most five anchored patterns tried on it
    const fence = fenceRe.exec(line);
    if (fence) {
      const body: string[] = [];
      i++;
      while (i < lines.length && !lines[i].trim().startsWith(fence[1])) body.push(lines[i++]);
      i++;
      out.push({ t: "pre", lang: fence[2].trim().split(/\s/, 1)[0] ?? "", text: body.join("\n") });
      continue;
    }
    const heading = headingRe.exec(line);
    if (heading) {
      // # → h2: the page has its own h1.
      out.push({ t: "h", level: Math.min(6, heading[1].length + 1), kids: parseInline(heading[2]) });
      i++;
      continue;
    }
    if (itemRe.test(line)) {
      const ordered = /^\s*\d/.test(line);
      const items: Inline[][] = [];
      while (i < lines.length && itemRe.test(lines[i])) {
        work.reads += 2 * (lines[i].length + 1);
        items.push(parseInline(lines[i++].replace(itemRe, "")));
      }
      out.push({ t: "list", ordered, items });
      continue;
    }
    if (depth < maxQuoteDepth && quoteRe.test(line)) {
      const quoted: string[] = [];
      while (i < lines.length && quoteRe.test(lines[i])) quoted.push(lines[i++].replace(/^\s*>\s?/, ""));
      out.push({ t: "quote", blocks: parseMarkdown(quoted.join("\n"), depth + 1) });
      continue;
    }
    if (line.trim() === "") {
      i++;
      continue;
    }
    const para: Inline[][] = [parseInline(line)];
    i++;
    while (i < lines.length && lines[i].trim() !== "" && !paraEndRe.test(lines[i])) {
      work.reads += 2 * (lines[i].length + 1);
      para.push(parseInline(lines[i++]));
    }
    out.push({ t: "p", lines: para });
  }
  return out;
}

/** safeHref keeps http(s) and mailto links, and nothing else. */
export function safeHref(url: string): string | undefined {
  try {
    const u = new URL(url, "http://invalid.invalid/");
    if ((u.protocol === "http:" || u.protocol === "https:") && u.host !== "invalid.invalid") return u.href;
    if (u.protocol === "mailto:") return u.href;
  } catch {
    /* not a URL */
  }
  return undefined;
}

/**
 * Ahead answers "where is the next c at or after q" for one line. Queries
 * come in document order (the scanner never moves backwards), so one
 * remembered answer per character makes every search cover new ground:
 * the searches of one line together read it once per character.
 */
class Ahead {
  private static readonly chars = "])*_";
  private readonly from = [-1, -1, -1, -1];
  private readonly found = [-1, -1, -1, -1];
  constructor(private readonly s: string) {}

  /** next is the index of the next c (one of ] ) * _) at or after q, or the line's length. */
  next(c: string, q: number): number {
    const k = Ahead.chars.indexOf(c);
    if (q >= this.from[k] && q <= this.found[k]) return this.found[k];
    let at = this.s.indexOf(c, q);
    if (at < 0) at = this.s.length;
    work.reads += at - q + 1;
    this.from[k] = q;
    this.found[k] = at;
    return at;
  }
}

/** Backticks finds, for a run of n backticks, the next run of exactly n. */
class Backticks {
  private readonly runs = new Map<number, number[]>();
  private readonly cursor = new Map<number, number>();
  constructor(s: string) {
    work.reads += s.length;
    for (let i = 0; i < s.length; ) {
      if (s.charCodeAt(i) !== 96) {
        i++;
        continue;
      }
      let j = i;
      while (j < s.length && s.charCodeAt(j) === 96) j++;
      const list = this.runs.get(j - i) ?? [];
      list.push(i);
      this.runs.set(j - i, list);
      i = j;
    }
  }

  /** closer is the start of the first run of n backticks at or after q, or -1. */
  closer(n: number, q: number): number {
    const list = this.runs.get(n);
    if (!list) return -1;
    let k = this.cursor.get(n) ?? 0;
    while (k < list.length && list[k] < q) (k++, work.reads++);
    this.cursor.set(n, k);
    return k < list.length ? list[k] : -1;
  }
}

const wordChar = /[\p{L}\p{N}]/u;
/** special are the characters at which inline markup may start. */
const special = /[\\`[!*_hH]/g;
const punct = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";

/** isWord says whether the character at i is a letter or digit (false outside the string). */
function isWord(s: string, i: number): boolean {
  return i >= 0 && i < s.length && wordChar.test(s[i]);
}

/** parseInline parses one line's inline markup. */
export function parseInline(line: string): Inline[] {
  return new InlineScanner(line).scan(0, line.length, 0);
}

class InlineScanner {
  private readonly ahead: Ahead;
  private ticksOf: Backticks | undefined;
  constructor(private readonly s: string) {
    this.ahead = new Ahead(s);
  }

  /** ticks indexes the line's backtick runs, on first use. */
  private get ticks(): Backticks {
    return (this.ticksOf ??= new Backticks(this.s));
  }

  /** scan parses s[from:to]; depth counts the markup it is inside. */
  scan(from: number, to: number, depth: number): Inline[] {
    const s = this.s;
    const out: Inline[] = [];
    let text = from; // start of the pending plain text
    // Text runs are merged, so that an escape does not split one.
    const add = (x: Inline) => {
      const last = out.length - 1;
      if (typeof x === "string" && typeof out[last] === "string") out[last] += x;
      else out.push(x);
    };
    const flush = (end: number) => {
      if (end > text) add(s.slice(text, end));
    };
    const nest = (a: number, b: number): Inline[] => (depth + 1 >= maxInlineDepth ? [s.slice(a, b)] : this.scan(a, b, depth + 1));
    let i = from;
    while (i < to) {
      const c = s[i];
      work.reads++;
      if (!"\\`[!*_hH".includes(c)) {
        // Plain text: go to the next character that may start markup.
        special.lastIndex = i;
        const m = special.exec(s);
        const next = m ? m.index : s.length;
        work.reads += next - i;
        i = Math.min(next, to);
        continue;
      }
      if (c === "\\" && i + 1 < to && punct.includes(s[i + 1])) {
        flush(i);
        text = i + 1;
        i += 2;
        continue;
      }
      if (c === "`") {
        let j = i;
        while (j < to && s[j] === "`") (j++, work.reads++);
        const n = j - i;
        const close = this.ticks.closer(n, j);
        if (close >= 0 && close + n <= to && close > j) {
          flush(i);
          out.push({ t: "code", text: s.slice(j, close) });
          i = text = close + n;
        } else i = j; // an unmatched run is text
        continue;
      }
      if (c === "[" || (c === "!" && s[i + 1] === "[")) {
        const image = c === "!";
        const open = image ? i + 1 : i;
        const close = this.ahead.next("]", open + 1);
        if (close < to && (image || close > open + 1) && s[close + 1] === "(") {
          const end = this.ahead.next(")", close + 2);
          if (end < to) {
            const target = s.slice(close + 2, end).trim();
            const url = target.split(/\s/, 1)[0] ?? "";
            flush(i);
            if (image) out.push({ t: "img", alt: s.slice(open + 1, close) });
            else {
              const href = safeHref(url);
              add(href ? { t: "a", href, kids: nest(open + 1, close) } : s.slice(i, end + 1));
            }
            i = text = end + 1;
            continue;
          }
        }
        i = open + 1;
        continue;
      }
      if (c === "*" || c === "_") {
        const strong = s[i + 1] === c;
        const n = strong ? 2 : 1;
        const first = s[i + n];
        // _ opens only at the start of a word and closes only at its end, so
        // snake_case stays as written; * may emphasize inside a word.
        const mayOpen = first !== undefined && first !== c && first.trim() !== "" && (c === "*" || !isWord(s, i - 1));
        if (mayOpen) {
          const close = this.ahead.next(c, i + n);
          const closes = close + n <= to && (!strong || s[close + 1] === c) && (c === "*" || !isWord(s, close + n));
          if (closes) {
            flush(i);
            out.push({ t: strong ? "strong" : "em", kids: nest(i + n, close) });
            i = text = close + n;
            continue;
          }
        }
        i += n;
        continue;
      }
      if ((c === "h" || c === "H") && !isWord(s, i - 1)) {
        const end = this.bareURL(i, to);
        if (end > i) {
          const href = safeHref(s.slice(i, end));
          if (href) {
            flush(i);
            out.push({ t: "a", href, kids: [s.slice(i, end)] });
            i = text = end;
          } else i = end; // not a URL after all: text, not looked at again
          continue;
        }
      }
      i++;
    }
    flush(to);
    return out;
  }

  /** bareURL is the end of an http(s) URL written out at i (trailing punctuation left out), or i. */
  private bareURL(i: number, to: number): number {
    const s = this.s;
    const head = s.slice(i, i + 8).toLowerCase();
    if (!head.startsWith("http://") && !head.startsWith("https://")) return i;
    let end = i;
    let open = 0;
    while (end < to && s[end].trim() !== "" && !"<>\"`".includes(s[end])) {
      work.reads++;
      if (s[end] === "(") open++;
      else if (s[end] === ")") open--;
      end++;
    }
    for (;;) {
      const last = s[end - 1];
      if (".,:;!?'*_".includes(last)) end--;
      else if (last === ")" && open < 0) (end--, open++);
      else break;
    }
    return end - i > head.indexOf("//") + 2 ? end : i;
  }
}

/** renderMarkdown returns a fragment for md; text longer than plainAbove is shown as written. */
export function renderMarkdown(md: string): DocumentFragment {
  const frag = document.createDocumentFragment();
  if (md.length > plainAbove) {
    frag.appendChild(h("p", { class: "md-plain-note" }, "Long message: shown as plain text."));
    frag.appendChild(h("div", { class: "text" }, md));
    return frag;
  }
  for (const b of parseMarkdown(md)) frag.appendChild(blockEl(b));
  return frag;
}

function blockEl(b: Block): Node {
  switch (b.t) {
    case "pre":
      return codeBlock(b.text, b.lang);
    case "h":
      return h(`h${b.level}` as "h2", {}, ...inlineEls(b.kids));
    case "list": {
      const list = h(b.ordered ? "ol" : "ul");
      for (const it of b.items) list.appendChild(h("li", {}, ...inlineEls(it)));
      return list;
    }
    case "quote": {
      const q = h("blockquote");
      for (const x of b.blocks) q.appendChild(blockEl(x));
      return q;
    }
    case "p": {
      const p = h("p");
      b.lines.forEach((l, k) => {
        if (k > 0) p.appendChild(h("br"));
        append(p, ...inlineEls(l));
      });
      return p;
    }
  }
}

/** codeBlock is a fenced code block with a Copy button. */
function codeBlock(text: string, lang: string): HTMLElement {
  const copy = h("button", { type: "button", class: "copy", "aria-label": "Copy code" }, "Copy");
  copy.addEventListener("click", () => {
    void navigator.clipboard?.writeText(text).then(
      () => (copy.textContent = "Copied"),
      () => (copy.textContent = "Copy failed"),
    );
    setTimeout(() => (copy.textContent = "Copy"), 1500);
  });
  return h("div", { class: "code-block" }, lang ? h("span", { class: "lang" }, lang) : null, copy, h("pre", {}, h("code", {}, text)));
}

function inlineEls(xs: Inline[]): Child[] {
  return xs.map((x): Child => {
    if (typeof x === "string") return x;
    switch (x.t) {
      case "code":
        return h("code", {}, x.text);
      case "img":
        return h("span", { class: "md-image" }, `[image: ${x.alt}]`);
      case "a":
        return h("a", { href: x.href, rel: "noopener noreferrer nofollow", target: "_blank" }, ...inlineEls(x.kids));
      default:
        return h(x.t, {}, ...inlineEls(x.kids));
    }
  });
}
