// One session's view: history paged backwards as the user scrolls, live
// entries, the prompt box (text and pasted images), cancel, /compact with a
// focus, checkpoint, resume with its banner, and the two distinct cards.

import type {
  CheckpointSavedNotification,
  Content,
  ContextCompactedNotification,
  Entry,
  ProgressParams,
  SessionListItem,
} from "../../typescript/src/browser.js";
import type { App } from "./main.js";
import { clear, h, when } from "./dom.js";
import { renderMarkdown } from "./markdown.js";
import { MigrationPanel } from "./migrate.js";

const pageSize = 40;

export class SessionView {
  readonly root: HTMLElement;
  private readonly log = h("ol", { id: "history", role: "log", "aria-label": "History", "aria-live": "polite" });
  private readonly scroller = h("div", { class: "scroller" }, this.log);
  private readonly bannerEl = h("div", { id: "resume-banner", role: "status", "aria-label": "Resume", hidden: true });
  private readonly note = h("p", { class: "note", role: "status", "aria-label": "Session status" });
  private readonly titleEl = h("h2", { id: "session-title" });
  private readonly text = h("textarea", { id: "prompt-text", "aria-label": "Prompt text", rows: 3, placeholder: "Message (paste images here)" });
  private readonly thumbs = h("div", { class: "thumbs", "aria-label": "Pasted images" });
  private readonly focusInput = h("input", { id: "compact-focus", "aria-label": "Compaction focus", placeholder: "focus for /compact (optional)" });
  private images: { mediaType: string; data: string; url: string }[] = [];
  private oldest: number | undefined;
  private newest = -1;
  private hasMore = false;
  private loading = false;
  private closed = false;
  readonly migration: MigrationPanel;

  constructor(
    private readonly app: App,
    readonly id: string,
    item: SessionListItem | undefined,
  ) {
    this.setTitle(item?.title || id);
    this.migration = new MigrationPanel(app, this, item);
    const form = h(
      "form",
      { id: "prompt", "aria-label": "Prompt", onsubmit: (e: Event) => (e.preventDefault(), void this.send()) },
      this.text,
      this.thumbs,
      h(
        "div",
        { class: "actions" },
        h("button", { type: "submit", id: "send" }, "Send"),
        h("button", { type: "button", id: "cancel", onclick: () => void this.cancel() }, "Cancel"),
        this.focusInput,
        h("button", { type: "button", id: "compact", onclick: () => void this.compact() }, "Compact"),
        h("button", { type: "button", id: "checkpoint", onclick: () => void this.checkpoint() }, "Checkpoint now"),
        h("button", { type: "button", id: "resume", onclick: () => void this.resume() }, "Resume"),
        h("button", { type: "button", id: "migrate", onclick: () => this.migration.toggle() }, "Migrate…"),
      ),
    );
    this.text.addEventListener("paste", (e) => this.paste(e as ClipboardEvent));
    this.text.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        void this.send();
      }
    });
    this.scroller.addEventListener("scroll", () => {
      if (this.scroller.scrollTop < 80) void this.older();
    });
    this.root = h(
      "article",
      { class: "session", "data-session": id, "aria-labelledby": "session-title" },
      h("header", {}, this.titleEl, h("span", { class: "harness" }, item ? `${item.harness} · ${item.cwd ?? ""}` : "")),
      this.bannerEl,
      this.scroller,
      this.note,
      form,
      this.migration.root,
    );
  }

  setTitle(t: string): void {
    this.titleEl.textContent = t;
  }

  close(): void {
    this.closed = true;
    for (const i of this.images) URL.revokeObjectURL(i.url);
  }

  /** load shows the newest page. */
  async load(): Promise<void> {
    const res = await this.app.guard(this.app.client.request("session/history", { sessionId: this.id, maxMessages: pageSize }));
    if (!res || this.closed) return;
    clear(this.log);
    for (const e of res.entries) this.log.appendChild(this.entryEl(e));
    this.oldest = res.entries[0]?.seq;
    this.newest = Math.max(this.newest, res.entries.at(-1)?.seq ?? -1);
    this.hasMore = res.hasMore;
    this.scroller.scrollTop = this.scroller.scrollHeight;
    if (this.hasMore && this.scroller.scrollHeight <= this.scroller.clientHeight) void this.older();
  }

  /** older prepends the page before the oldest entry shown. */
  async older(): Promise<void> {
    if (this.loading || !this.hasMore || this.oldest === undefined) return;
    this.loading = true;
    try {
      const res = await this.app.guard(
        this.app.client.request("session/history", { sessionId: this.id, beforeSeq: this.oldest, maxMessages: pageSize }),
      );
      if (!res || this.closed) return;
      const before = this.scroller.scrollHeight;
      const frag = document.createDocumentFragment();
      for (const e of res.entries) frag.appendChild(this.entryEl(e));
      this.log.insertBefore(frag, this.log.firstChild);
      this.scroller.scrollTop += this.scroller.scrollHeight - before;
      this.oldest = res.entries[0]?.seq ?? this.oldest;
      this.hasMore = res.hasMore && res.entries.length > 0;
    } finally {
      this.loading = false;
    }
  }

  onEntry(e: Entry): void {
    if (e.seq <= this.newest) return;
    this.newest = e.seq;
    const atBottom = this.scroller.scrollHeight - this.scroller.scrollTop - this.scroller.clientHeight < 60;
    // Live, a context.compacted or checkpoint entry shows as recorded
    // until its notification turns it into its card (below).
    this.log.appendChild(this.entryEl(e, true));
    if (atBottom) this.scroller.scrollTop = this.scroller.scrollHeight;
  }

  /** The "Context compacted" card, live: from session/contextCompacted. */
  onCompacted(n: ContextCompactedNotification): void {
    this.placeCard(n.entryId, compactedCard(n));
  }

  /** The "Checkpoint saved" card, live: from session/checkpointSaved. */
  onCheckpoint(n: CheckpointSavedNotification): void {
    this.placeCard(n.entryId, checkpointCard(n));
  }

  /**
   * placeCard puts a live card where its entry is shown (the entry the
   * notification names, announced just before it by session/update), so
   * that the live view and the view after a reload, which builds the same
   * card from that entry, are the same; with the entry not shown, at the end.
   */
  private placeCard(entryId: string, card: HTMLElement): void {
    const shown = Array.from(this.log.children).find((li) => (li as HTMLElement).dataset.entryId === entryId) as HTMLElement | undefined;
    card.dataset.entryId = entryId;
    if (shown) {
      if (shown.dataset.seq) card.dataset.seq = shown.dataset.seq;
      shown.replaceWith(card);
      return;
    }
    this.log.appendChild(card);
    this.scroller.scrollTop = this.scroller.scrollHeight;
  }

  banner(mode: string, reason?: string, nativeError?: string): void {
    this.bannerEl.hidden = false;
    this.bannerEl.dataset.mode = mode;
    clear(this.bannerEl);
    const names: Record<string, string> = {
      hot: "hot: the harness was still running",
      native: "native: the harness resumed its own session",
      checkpoint_restored: "checkpoint_restored: a fresh harness session was given Bridge's checkpoint",
      fresh: "fresh: a new harness session without the old context",
    };
    this.bannerEl.append(h("strong", {}, "Resumed "), names[mode] ?? mode);
    if (reason) this.bannerEl.append(h("span", { class: "reason" }, ` — ${reason}`));
    if (nativeError) this.bannerEl.append(h("span", { class: "reason" }, ` (harness said: ${nativeError})`));
  }

  onProgress(p: ProgressParams): void {
    this.migration.onProgress(p);
  }

  /**
   * entryEl shows one recorded entry. From the history (not live), a
   * context.compacted entry is the "Context compacted" card and a
   * checkpoint entry the "Checkpoint saved" card, built by the same
   * functions as the live cards from the same fields.
   */
  private entryEl(e: Entry, live = false): HTMLElement {
    const p = (e.payload ?? {}) as Record<string, unknown>;
    const card = live ? undefined : cardOf(e.kind, p);
    if (card) {
      card.dataset.entryId = e.id;
      card.dataset.seq = String(e.seq);
      return card;
    }
    const li = h("li", { class: `entry kind-${e.kind.replace(/[^a-z0-9]+/gi, "-")}`, "data-seq": String(e.seq), "data-entry-id": e.id });
    li.appendChild(h("span", { class: "kind" }, e.kind));
    li.appendChild(h("time", { datetime: e.createdAt }, when(e.createdAt)));
    const text = typeof p.text === "string" ? p.text : undefined;
    if (e.kind === "assistant.message" && text !== undefined) {
      li.appendChild(h("div", { class: "md" }, renderMarkdown(text)));
    } else if (text !== undefined) {
      li.appendChild(h("div", { class: "text" }, text));
    } else if (e.kind.startsWith("tool.")) {
      const name = typeof p.name === "string" ? p.name : "";
      const detail = e.kind === "tool.started" ? p.input : p.output;
      li.appendChild(h("div", { class: "text" }, name));
      if (detail !== undefined) li.appendChild(h("pre", {}, typeof detail === "string" ? detail : JSON.stringify(detail, null, 1)));
    } else {
      li.appendChild(h("pre", { class: "payload" }, JSON.stringify(p, null, 1)));
    }
    const images = Array.isArray(p.images) ? p.images.length : Array.isArray(p.attachments) ? p.attachments.length : 0;
    if (images > 0) li.appendChild(h("span", { class: "images" }, `${images} image(s)`));
    if (e.kind === "user.message" || e.kind === "assistant.message") {
      // A new session (on the harness chosen under "New session") that
      // starts from this session's record up to this entry.
      li.appendChild(
        h("button", { type: "button", class: "fork", "aria-label": `Fork from entry ${e.seq}`, onclick: () => void this.app.forkFrom(this.id, e.id) }, "Fork from here"),
      );
    }
    return li;
  }

  private paste(e: ClipboardEvent): void {
    for (const item of Array.from(e.clipboardData?.items ?? [])) {
      if (!item.type.startsWith("image/")) continue;
      const file = item.getAsFile();
      if (!file) continue;
      e.preventDefault();
      void this.addImage(file);
    }
  }

  /** addImage keeps a pasted image for the next prompt. */
  async addImage(file: Blob): Promise<void> {
    const data = await new Promise<string>((resolve, reject) => {
      const r = new FileReader();
      r.onload = () => resolve(String(r.result).replace(/^data:[^,]*,/, ""));
      r.onerror = () => reject(r.error);
      r.readAsDataURL(file);
    });
    const url = URL.createObjectURL(file);
    const img = { mediaType: file.type, data, url };
    this.images.push(img);
    this.thumbs.appendChild(
      h(
        "span",
        { class: "thumb" },
        h("img", { src: url, alt: "pasted image" }),
        h("button", {
          type: "button",
          "aria-label": "Remove image",
          onclick: (ev: Event) => {
            this.images = this.images.filter((x) => x !== img);
            (ev.currentTarget as HTMLElement).parentElement?.remove();
          },
        }, "×"),
      ),
    );
  }

  async send(): Promise<void> {
    const text = this.text.value;
    if (!text.trim() && this.images.length === 0) return;
    const content: Content[] = [];
    if (text.trim()) content.push({ type: "text", text });
    for (const i of this.images) content.push({ type: "image", mediaType: i.mediaType, data: i.data } as Content);
    this.text.value = "";
    this.images = [];
    clear(this.thumbs);
    this.app.running.add(this.id);
    this.app.redraw(this.id);
    this.note.textContent = "Running…";
    const res = await this.app.guard(this.app.client.request("session/prompt", { sessionId: this.id, content: content as [Content, ...Content[]] }));
    this.app.running.delete(this.id);
    this.app.redraw(this.id);
    this.note.textContent = res ? `Turn ended: ${res.stopReason}` : "Turn failed.";
  }

  async cancel(): Promise<void> {
    await this.app.guard(this.app.client.request("session/cancel", { sessionId: this.id }));
  }

  async compact(): Promise<void> {
    const focus = this.focusInput.value.trim();
    this.note.textContent = "Compacting…";
    const res = await this.app.guard(this.app.client.request("session/compact", { sessionId: this.id, ...(focus ? { focus } : {}) }));
    if (!res) {
      this.note.textContent = "Compaction failed.";
      return;
    }
    const by = res.by === "harness" ? "the harness compacted its context" : "Bridge wrote a checkpoint instead";
    this.note.textContent = focus && !res.focusApplied ? `Compacted (${by}); focus not applied: ${res.focusNote ?? "the harness ignores it"}` : `Compacted (${by}).`;
  }

  async checkpoint(): Promise<void> {
    this.note.textContent = "Writing a checkpoint…";
    const res = await this.app.guard(this.app.client.request("session/checkpoint", { sessionId: this.id, reason: "manual" }));
    this.note.textContent = res ? `Checkpoint ${res.entryId} written.` : "Checkpoint failed.";
  }

  async resume(): Promise<void> {
    const res = await this.app.guard(this.app.client.request("session/resume", { sessionId: this.id }));
    if (res) this.banner(res.mode, res.reason, res.nativeError);
  }
}

/** The fields of the "Context compacted" card: session/contextCompacted's, and a context.compacted entry's payload's. */
interface Compacted {
  harness: string;
  trigger: string;
  preTokens?: number;
  postTokens?: number;
  estimated?: boolean;
}

/** The fields of the "Checkpoint saved" card: session/checkpointSaved's, and a checkpoint entry's payload's. */
interface Checkpointed {
  reason: string;
  provenance: string;
}

/** card builds a card; its text is set as text. */
function card(cls: string, title: string, body: string): HTMLElement {
  return h("li", { class: `card ${cls}`, role: "note", "aria-label": title }, h("strong", {}, title), h("p", {}, body));
}

/** compactedCard is the "Context compacted" card. */
export function compactedCard(n: Compacted): HTMLElement {
  const tokens = n.preTokens !== undefined ? ` ${n.preTokens} → ${n.postTokens ?? "?"} tokens${n.estimated ? " (estimated)" : ""}` : "";
  return card("card-compacted", "Context compacted", `${n.harness} compacted its context (${n.trigger}).${tokens}`);
}

/** checkpointCard is the "Checkpoint saved" card. */
export function checkpointCard(n: Checkpointed): HTMLElement {
  return card("card-checkpoint", "Checkpoint saved", `Bridge checkpoint (${n.reason}, ${n.provenance}); the harness's context is unchanged.`);
}

/**
 * cardOf is the card a recorded entry stands for: context.compacted (the
 * harness compacted its context) and checkpoint (Bridge committed one), or
 * undefined for every other kind, and for a payload without the card's
 * fields (it is then shown as recorded).
 */
function cardOf(kind: string, p: Record<string, unknown>): HTMLElement | undefined {
  const str = (v: unknown) => (typeof v === "string" ? v : undefined);
  const num = (v: unknown) => (typeof v === "number" ? v : undefined);
  if (kind === "context.compacted") {
    const harness = str(p.harness);
    const trigger = str(p.trigger);
    if (harness === undefined || trigger === undefined) return undefined;
    return compactedCard({ harness, trigger, preTokens: num(p.preTokens), postTokens: num(p.postTokens), estimated: p.estimated === true });
  }
  if (kind === "checkpoint") {
    const reason = str(p.reason);
    const provenance = str(p.provenance);
    if (reason === undefined || provenance === undefined) return undefined;
    return checkpointCard({ reason, provenance });
  }
  return undefined;
}
