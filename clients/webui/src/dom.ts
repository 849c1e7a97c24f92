// DOM helpers. Text is always set as text (createTextNode/textContent);
// nothing in the WebUI parses a string as HTML, so text from a session, a model or
// a harness can never become markup.

export type Child = Node | string | null | undefined | false;
type Attrs = Record<string, string | boolean | number | EventListener | undefined>;

/** h makes an element: attributes (on* keys are listeners), then children. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "value" && "value" in el) (el as HTMLInputElement).value = String(v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, ...children);
  return el;
}

/** append adds children; strings become text nodes. */
export function append(el: Node, ...children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
  }
}

/** text sets an element's text, only when it changed (an element kept in place is not touched otherwise). */
export function text(el: Element, t: string): void {
  if (el.textContent !== t) el.textContent = t;
}

/** attr sets an attribute, only when it changed. */
export function attr(el: Element, name: string, value: string): void {
  if (el.getAttribute(name) !== value) el.setAttribute(name, value);
}

/** clear removes every child. */
export function clear(el: Node): void {
  while (el.firstChild) el.removeChild(el.firstChild);
}

const pad = (n: number): string => (n < 10 ? `0${n}` : String(n));

/**
 * when formats an ISO time for people, in local time: 2026-12-02 14:09:35.
 * It is written out by hand rather than by Intl.DateTimeFormat or
 * toLocaleString: the first Intl formatter a page makes costs Chromium
 * 100–200 ms (ICU's locale and time zone data), which was most of the time
 * between the session list arriving and being shown.
 */
export function when(iso: string | undefined): string {
  if (!iso) return "";
  const d = new Date(iso);
  if (isNaN(d.getTime())) return iso;
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** count writes a whole number with thousands separators (12,345), without Intl (see when). */
export function count(n: number): string {
  const s = String(Math.trunc(n));
  return /^-?\d+$/.test(s) ? s.replace(/\B(?=(\d{3})+$)/g, ",") : s;
}
