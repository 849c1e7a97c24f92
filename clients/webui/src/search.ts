// Search across every session (session/search): a query box above the
// session list; the hits open in their own panel as cards (the session,
// its harness, who spoke, when, and a snippet whose matched words are
// marked); choosing a hit opens its session at that entry, highlighted.

import type { BridgeClient, SearchHit, TextSpan } from "../../typescript/src/browser.js";
import { h, append, clear, when } from "./dom.js";
import { harnessName } from "./entries.js";

/** kinds says, for the kinds search finds, who wrote the text. */
const kinds: Record<string, string> = {
  "user.message": "You",
  "assistant.message": "Agent",
  "tool.started": "Tool call",
  "tool.completed": "Tool output",
  "plan.updated": "Plan",
};

/** SearchPanel is the search form and its results. */
export class SearchPanel {
  readonly input = h("input", { type: "search", id: "search-query", "aria-label": "Search query", placeholder: "search every session" });
  readonly results = h("ol", { id: "search-results", "aria-label": "Search results" });
  private readonly summary = h("p", { class: "search-summary", role: "status" });
  readonly panel = h("section", { id: "search-panel", "aria-label": "Search", hidden: true });
  readonly root: HTMLElement;

  constructor(
    private readonly client: () => BridgeClient,
    private readonly open: (sessionId: string, entryId: string) => Promise<void>,
    private readonly show: () => void,
  ) {
    this.root = h(
      "form",
      { id: "search", role: "search", "aria-label": "Search sessions", onsubmit: (e: Event) => (e.preventDefault(), void this.run()) },
      this.input,
      h("button", { type: "submit" }, "Search"),
    );
    this.panel.append(h("h2", {}, "Search results"), this.summary, this.results);
  }

  async run(): Promise<void> {
    const query = this.input.value.trim();
    clear(this.results);
    this.summary.className = "search-summary";
    if (!query) return;
    this.show();
    this.summary.textContent = `Searching for “${query}”…`;
    let hits: SearchHit[];
    try {
      hits = (await this.client().request("session/search", { query, limit: 50 })).hits;
    } catch (err) {
      // A query FTS5 cannot parse comes back as -32602 with a message
      // saying what is wrong: show it as text.
      this.summary.className = "search-summary error";
      this.summary.textContent = (err as { message?: string }).message ?? String(err);
      return;
    }
    this.summary.textContent = hits.length === 0 ? `No matches for “${query}”.` : `${hits.length === 50 ? "The first 50" : hits.length} match${hits.length === 1 ? "" : "es"} for “${query}”.`;
    for (const hit of hits) {
      const title = hit.sessionTitle || hit.sessionId;
      this.results.appendChild(
        h(
          "li",
          { class: "hit", "data-session": hit.sessionId, "data-entry": hit.entryId },
          h("button", { type: "button", class: "open-hit", "aria-label": `Open ${title} at entry ${hit.seq}`, onclick: () => void this.open(hit.sessionId, hit.entryId) }, title),
          h(
            "p",
            { class: "hit-meta" },
            h("span", { class: "harness" }, harnessName(hit.harness)),
            " · ",
            h("span", { class: "kind" }, kinds[hit.kind] ?? hit.kind),
            " · ",
            h("time", { datetime: hit.createdAt }, when(hit.createdAt)),
          ),
          h("p", { class: "snippet" }, ...marked(hit.snippet, hit.highlights)),
        ),
      );
    }
  }
}

/** marked splits a snippet into text and <mark> nodes; highlights count code points. */
export function marked(snippet: string, highlights: TextSpan[]): Node[] {
  const cps = Array.from(snippet);
  const out: Node[] = [];
  let at = 0;
  for (const s of highlights) {
    if (s.start < at || s.end > cps.length || s.end <= s.start) continue;
    if (s.start > at) out.push(document.createTextNode(cps.slice(at, s.start).join("")));
    const m = h("mark", {});
    append(m, cps.slice(s.start, s.end).join(""));
    out.push(m);
    at = s.end;
  }
  if (at < cps.length) out.push(document.createTextNode(cps.slice(at).join("")));
  return out;
}
