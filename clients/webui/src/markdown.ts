// A small sanitizing Markdown renderer: it builds DOM nodes directly
// (headings, paragraphs, lists, block quotes, fenced code, inline code,
// emphasis, links), never HTML text. Raw HTML in the source stays visible
// as text; links keep only http(s) and mailto targets; images are shown as
// their alt text (nothing is fetched).

import { append, h, type Child } from "./dom.js";

/** renderMarkdown returns a fragment for md. */
export function renderMarkdown(md: string): DocumentFragment {
  const frag = document.createDocumentFragment();
  const lines = md.replace(/\r\n?/g, "\n").split("\n");
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    const fence = /^\s*(```|~~~)(.*)$/.exec(line);
    if (fence) {
      const body: string[] = [];
      i++;
      while (i < lines.length && !lines[i].trim().startsWith(fence[1])) body.push(lines[i++]);
      i++;
      frag.appendChild(h("pre", {}, h("code", {}, body.join("\n"))));
      continue;
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    if (heading) {
      const level = Math.min(6, heading[1].length + 1); // # → h2: the page has its own h1
      frag.appendChild(h(`h${level}` as "h2", {}, ...inline(heading[2])));
      i++;
      continue;
    }
    if (/^\s*([-*+]|\d+[.)])\s+/.test(line)) {
      const ordered = /^\s*\d/.test(line);
      const list = h(ordered ? "ol" : "ul");
      while (i < lines.length && /^\s*([-*+]|\d+[.)])\s+/.test(lines[i])) {
        list.appendChild(h("li", {}, ...inline(lines[i].replace(/^\s*([-*+]|\d+[.)])\s+/, ""))));
        i++;
      }
      frag.appendChild(list);
      continue;
    }
    if (/^\s*>/.test(line)) {
      const quoted: string[] = [];
      while (i < lines.length && /^\s*>/.test(lines[i])) quoted.push(lines[i++].replace(/^\s*>\s?/, ""));
      frag.appendChild(h("blockquote", {}, renderMarkdown(quoted.join("\n"))));
      continue;
    }
    if (line.trim() === "") {
      i++;
      continue;
    }
    const para: string[] = [];
    while (i < lines.length && lines[i].trim() !== "" && !/^(#{1,6}\s|\s*```|\s*~~~|\s*>|\s*([-*+]|\d+[.)])\s)/.test(lines[i])) {
      para.push(lines[i++]);
    }
    const p = h("p");
    para.forEach((l, k) => {
      if (k > 0) p.appendChild(h("br"));
      append(p, ...inline(l));
    });
    frag.appendChild(p);
  }
  return frag;
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

const inlineRe = /(`+)([^`]+?)\1|!\[([^\]]*)\]\(([^)\s]*)[^)]*\)|\[([^\]]+)\]\(([^)\s]*)[^)]*\)|\*\*([^*]+)\*\*|__([^_]+)__|\*([^*\s][^*]*)\*|_([^_\s][^_]*)_/;

/** inline renders one line's inline markup. */
function inline(text: string): Child[] {
  const out: Child[] = [];
  let rest = text;
  while (rest.length > 0) {
    const m = inlineRe.exec(rest);
    if (!m) {
      out.push(rest);
      break;
    }
    if (m.index > 0) out.push(rest.slice(0, m.index));
    if (m[1]) out.push(h("code", {}, m[2]));
    else if (m[4] !== undefined && m[0].startsWith("!")) out.push(h("span", { class: "md-image" }, `[image: ${m[3]}]`));
    else if (m[5] !== undefined) {
      const href = safeHref(m[6]);
      out.push(href ? h("a", { href, rel: "noopener noreferrer nofollow", target: "_blank" }, ...inline(m[5])) : m[0]);
    } else if (m[7] !== undefined || m[8] !== undefined) out.push(h("strong", {}, ...inline(m[7] ?? m[8])));
    else if (m[9] !== undefined || m[10] !== undefined) out.push(h("em", {}, ...inline(m[9] ?? m[10])));
    rest = rest.slice(m.index + m[0].length);
  }
  return out;
}
