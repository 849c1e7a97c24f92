// One session's view: history paged backwards as the user scrolls up (and,
// opened at a search hit, forwards as they scroll down, to the live end), its
// rows virtualized (rows.ts: only those near the view are in the page),
// live entries read as a conversation (entries.ts), the approvals waiting for
// the user, the model and effort picker, the prompt box (Enter sends,
// Shift+Enter is a new line, Escape cancels; text and pasted images; a
// prompt written while a turn runs waits in a visible queue), /compact
// with a focus, checkpoint, resume with its banner, and the two distinct
// cards.

import {
  ClosedError,
  type CheckpointSavedNotification,
  type Content,
  type ContextCompactedNotification,
  type Entry,
  type ProgressParams,
  type QueuedPrompt,
  type SessionListItem,
  type SessionHistoryResult,
  type SessionModelsResult,
} from "../../typescript/src/browser.js";
import type { App, PendingApproval } from "./main.js";
import { clear, h } from "./dom.js";
import { Conversation, diffOf, gauge, harnessName } from "./entries.js";
import { MigrationPanel } from "./migrate.js";
import { VirtualList, type Row } from "./rows.js";

/** firstPage is how many messages the newest page brings: a screenful, so a session opens quickly. */
const firstPage = 20;
/** pageSize is how many messages each older page brings as the user scrolls up. */
const pageSize = 40;
/** retryFirst and retryMost bound the pause before a page that failed is asked for again (doubling; ms). */
const retryFirst = 1000;
const retryMost = 30_000;

/**
 * Retry asks again for a page that failed, after a pause that doubles each
 * time (1 s, 2 s, 4 s… at most 30 s), whatever the view does meanwhile,
 * and its line (note) says so in words until a page comes.
 */
class Retry {
  readonly note: HTMLElement;
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** failures counts the failures since the last page that came. */
  failures = 0;

  constructor(
    label: string,
    private readonly what: string,
  ) {
    this.note = h("p", { class: "note older-note", role: "status", "aria-label": label, hidden: true });
  }

  /** due says that a retry is waiting for its time. */
  get due(): boolean {
    return this.timer !== undefined;
  }

  /** failed says why the page failed and asks for it again (again) after the pause. */
  failed(err: unknown, again: () => void): void {
    const e = err as { message?: string; data?: { code?: string } };
    const wait = Math.min(retryFirst * 2 ** this.failures, retryMost);
    this.failures++;
    this.note.textContent = `${this.what} could not be loaded${e.data?.code ? ` (${e.data.code})` : ""}: ${e.message ?? String(err)}. Trying again in ${wait / 1000} s…`;
    this.note.hidden = false;
    this.stop();
    this.timer = setTimeout(() => {
      this.timer = undefined;
      again();
    }, wait);
  }

  /** done: a page came. */
  done(): void {
    this.failures = 0;
    this.stop();
    this.note.hidden = true;
  }

  /** stop drops the retry waiting, if any. */
  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}

/** stopReasons say how a turn ended, in words. */
const stopReasons: Record<string, string> = {
  end_turn: "Turn ended.",
  cancelled: "Turn ended: cancelled.",
  max_tokens: "Turn ended: the model reached its output limit.",
  max_turn_requests: "Turn ended: the harness reached its step limit.",
  refusal: "Turn ended: the model refused.",
  error: "Turn ended: the harness reported an error.",
};

export class SessionView {
  readonly root: HTMLElement;
  private readonly log = h("ol", { id: "history" });
  private readonly scroller = h("div", { class: "scroller", role: "log", tabindex: "0", "aria-label": "History", "aria-live": "polite" }, this.log);
  private readonly bannerEl = h("div", { id: "resume-banner", role: "status", "aria-label": "Resume", hidden: true });
  private readonly note = h("p", { class: "note", role: "status", "aria-label": "Session status" });
  /** olderRetry asks again for an older page that failed; its line says so. */
  private readonly olderRetry = new Retry("Older entries", "Older entries");
  /** newerRetry does the same for a forward page (the view was opened at an entry). */
  private readonly newerRetry = new Retry("Newer entries", "Newer entries");
  /** firstRetry does the same for a first page (the newest, or the page around an entry). */
  private readonly firstRetry = new Retry("Session entries", "The session's entries");
  /** asks counts the first pages asked for: only the last one asked is shown. */
  private asks = 0;
  private readonly titleEl = h("h2", { id: "session-title" });
  private readonly gaugeEl = h("div", { class: "header-gauge" });
  private readonly approvalsEl = h("section", { class: "approvals", "aria-label": "Waiting for you", hidden: true });
  private readonly text = h("textarea", {
    id: "prompt-text",
    "aria-label": "Prompt text",
    "aria-describedby": "prompt-hint",
    rows: 3,
    placeholder: "Message (paste images here)",
  });
  private readonly thumbs = h("div", { class: "thumbs", role: "group", "aria-label": "Pasted images" });
  private readonly queueEl = h("ol", { class: "queued", "aria-label": "Queued prompts", hidden: true });
  private readonly focusInput = h("input", { id: "compact-focus", "aria-label": "Compaction focus", placeholder: "focus for /compact (optional)" });
  private readonly modelPanel = h("section", { id: "model-panel", "aria-label": "Model and effort", hidden: true });
  private images: { mediaType: string; data: string; url: string }[] = [];
  private pending: Entry[] = [];
  private oldest: number | undefined;
  private newest = -1;
  private hasMore = false;
  /**
   * hasNewer: the view was opened at an entry (a search hit) and the record
   * goes on after the rows loaded. Live entries are then held (not shown in
   * the middle of the history) until forward pages reach the newest entry.
   */
  private hasNewer = false;
  private held: Entry[] = [];
  /**
   * early holds the live entries that come while a first page (the newest,
   * or the page around the entry the view opens at) is asked for: Bridge
   * may have read that page before they were recorded and answer after
   * their notifications, so they are shown with it, after its last entry,
   * never before it (its rows replace what is shown). While the page
   * fails they are shown as they come too (and still kept for it).
   * Undefined when no first page is asked for.
   */
  private early: Entry[] | undefined = [];
  private loading = false;
  private loadingNewer = false;
  private closed = false;
  private conversation: Conversation;
  private readonly makeConversation: () => Conversation;
  private readonly rows: VirtualList;
  /** loaded counts the entries received (history pages and live). */
  private loaded = 0;
  readonly migration: MigrationPanel;

  /** newestPage and queued are the answers load shows, asked for when the view is made. */
  private readonly newestPage: Promise<SessionHistoryResult>;
  private readonly queued: Promise<QueuedPrompt[] | undefined>;

  private readonly toNewestButton = h("button", { type: "button", class: "to-newest", hidden: true, onclick: () => void this.showNewest() }, "Newer entries below · go to the newest");

  /**
   * at, when set, is the entry the view opens at (a search hit, or where
   * the view was before a reconnect): the page around it is asked for
   * instead of the newest, and the entry is scrolled into the middle of the
   * view. hit, when among the rows, is highlighted (the search hit).
   */
  constructor(
    private readonly app: App,
    readonly id: string,
    item: SessionListItem | undefined,
    private readonly at?: string,
    readonly hit = at,
  ) {
    // The first page and the queue are asked for first thing, so that
    // Bridge reads them while the view is built (load shows them).
    this.newestPage = this.ask(at);
    this.queued = app.client.request("session/queue", { sessionId: id }).then(
      (q) => q.items,
      () => undefined,
    );
    this.setTitle(item?.title || id);
    this.makeConversation = () => new Conversation(item?.harness ?? "", { fork: (entryId) => void this.app.forkFrom(this.id, entryId) });
    this.conversation = this.makeConversation();
    this.migration = new MigrationPanel(app, this, item);
    this.rows = new VirtualList(this.scroller, this.log);
    const form = h(
      "form",
      { id: "prompt", "aria-label": "Prompt", onsubmit: (e: Event) => (e.preventDefault(), void this.send()) },
      this.queueEl,
      this.text,
      h("p", { id: "prompt-hint", class: "hint keys" }, "Enter sends · Shift+Enter adds a line · Esc cancels the turn"),
      this.thumbs,
      h(
        "div",
        { class: "actions" },
        h("button", { type: "submit", id: "send" }, "Send"),
        h("button", { type: "button", id: "cancel", onclick: () => void this.cancel() }, "Cancel"),
      ),
      h(
        "div",
        { class: "actions secondary" },
        this.focusInput,
        h("button", { type: "button", id: "compact", onclick: () => void this.compact() }, "Compact"),
        h("button", { type: "button", id: "checkpoint", onclick: () => void this.checkpoint() }, "Checkpoint now"),
        h("button", { type: "button", id: "resume", onclick: () => void this.resume() }, "Resume"),
        h("button", { type: "button", id: "migrate", onclick: () => this.migration.toggle() }, "Migrate…"),
      ),
    );
    this.text.addEventListener("paste", (e) => this.paste(e as ClipboardEvent));
    this.text.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        void this.send();
      }
    });
    this.scroller.addEventListener("scroll", () => {
      const sc = this.scroller;
      if (sc.scrollTop < 80) void this.older();
      if (sc.scrollHeight - sc.scrollTop - sc.clientHeight < 200) void this.newer();
    });
    this.root = h(
      "article",
      {
        class: "session",
        "data-session": id,
        "aria-labelledby": "session-title",
        onkeydown: (e: Event) => {
          if ((e as KeyboardEvent).key === "Escape" && this.app.running.has(this.id)) {
            e.preventDefault();
            void this.cancel();
          }
        },
      },
      h(
        "header",
        {},
        this.titleEl,
        h("span", { class: "harness" }, item ? `${harnessName(item.harness)} · ${item.cwd ?? ""}` : ""),
        this.gaugeEl,
        h("button", { type: "button", id: "model-button", "aria-expanded": "false", onclick: (e: Event) => void this.toggleModels(e.currentTarget as HTMLElement) }, "Model…"),
      ),
      this.modelPanel,
      this.bannerEl,
      this.firstRetry.note,
      this.olderRetry.note,
      this.scroller,
      this.newerRetry.note,
      this.toNewestButton,
      this.approvalsEl,
      this.note,
      form,
      this.migration.root,
    );
    this.showApprovals();
    // Opened again while a prompt this page sent runs (sent from a view since closed).
    if (app.running.has(id)) this.note.textContent = "Running… (Esc cancels)";
  }

  setTitle(t: string): void {
    this.titleEl.textContent = t;
  }

  close(): void {
    this.closed = true;
    this.olderRetry.stop();
    this.newerRetry.stop();
    this.firstRetry.stop();
    this.rows.close();
    for (const i of this.images) URL.revokeObjectURL(i.url);
  }

  /**
   * load shows the first page (the newest, a small one: what fills the
   * screen; or the page around the entry the view opens at), asked for when
   * the view was made. The queue was asked for at the same time, so its
   * answer does not hold the history back.
   */
  async load(): Promise<void> {
    void this.queued.then((items) => items && !this.closed && this.onQueue(items));
    await this.first(this.at, this.newestPage);
  }

  /** ask asks Bridge for a first page: the page around entry at, or the newest. */
  private ask(at: string | undefined): Promise<SessionHistoryResult> {
    return this.app.client.request(
      "session/history",
      at ? { sessionId: this.id, around: at, maxMessages: pageSize } : { sessionId: this.id, maxMessages: firstPage },
    );
  }

  /**
   * first shows a first page (asked, when already asked for): the page
   * around entry at, or the newest. One that fails is asked for again after
   * a pause that doubles each time, its line saying so, and the live
   * entries are shown as they come meanwhile (and kept for the page, which
   * shows them again after its last entry, once each). Entry at not found,
   * or not on the session's active branch, opens the session at its newest
   * entries (the error in the status line); a session not found, or a
   * closed connection (the reconnect opens the view again), is not asked
   * for again.
   */
  private async first(at: string | undefined, asked = this.ask(at)): Promise<void> {
    const ask = ++this.asks;
    this.firstRetry.stop();
    let res: SessionHistoryResult;
    try {
      res = await asked;
    } catch (err) {
      if (this.closed || ask !== this.asks) return;
      const code = (err as { data?: { code?: string } }).data?.code;
      if (!(err instanceof ClosedError) && code !== "not_found" && code !== "invalid") {
        this.firstRetry.failed(err, () => void this.first(at));
        // Shown meanwhile, kept (early) for the page.
        for (const e of this.early ?? []) this.live(e);
        return;
      }
      void this.app.guard(Promise.reject(err));
      if (at && !(err instanceof ClosedError)) return this.first(undefined);
      this.firstRetry.done();
      this.release();
      return;
    }
    if (this.closed || ask !== this.asks) return;
    this.firstRetry.done();
    this.show(res, at);
  }

  /** release shows the live entries held for a first page that failed for good (as they come, when there is none). */
  private release(): void {
    const early = this.early ?? [];
    this.early = undefined;
    for (const e of early) this.onEntry(e);
  }

  /**
   * show puts a first page in place of what is shown: at entry at
   * (highlighted, in view), or at the end, followed by the live entries
   * recorded after its last one that came while it was asked for.
   */
  private show(res: SessionHistoryResult, at?: string): void {
    const rows: Row[] = [];
    // Every row is made again: a tool's card too (the conversation knew it from the rows replaced).
    this.conversation = this.makeConversation();
    for (const e of res.entries) {
      const row = this.rowOf(e, false);
      if (row) rows.push(row);
    }
    // The rows of entry at and of the hit: their own, or (a tool's completion, which has none) the card it completed.
    const rowAt = (id: string | undefined) => {
      const seq = id ? res.entries.find((e) => e.id === id)?.seq : undefined;
      let i = -1;
      if (seq !== undefined) for (let k = 0; k < rows.length && rows[k].seq <= seq; k++) i = k;
      return i;
    };
    const centre = rowAt(at);
    const hit = rowAt(this.hit);
    this.oldest = res.entries[0]?.seq;
    const last = res.entries.at(-1)?.seq ?? -1;
    this.newest = at ? last : Math.max(this.newest, last);
    this.hasMore = res.hasMore;
    // Live entries that came while the page was asked for and are not in
    // it, once each, in order: after it, or held while the page does not
    // reach the newest entry.
    const later = new Map<number, Entry>();
    for (const e of [...this.held, ...(this.early ?? []), ...this.pending]) if (e.seq > last) later.set(e.seq, e);
    const live = [...later.values()].sort((a, b) => a.seq - b.seq);
    this.early = undefined;
    this.pending = [];
    this.held = [];
    this.loaded = 0;
    this.setNewer(res.hasNewer === true);
    if (this.hasNewer) this.held = live.slice(-2000);
    else {
      for (const e of live) {
        const row = this.rowOf(e, false);
        if (row) rows.push(row);
      }
      this.newest = Math.max(this.newest, live.at(-1)?.seq ?? -1);
      this.loaded = live.length;
    }
    this.count(res.entries.length);
    if (hit >= 0) {
      const make = rows[hit].make;
      rows[hit].make = () => {
        const el = make();
        el.classList.add("search-hit");
        el.dataset.hit = "true";
        return el;
      };
    }
    if (centre >= 0) this.rows.resetAt(rows, centre);
    else this.rows.reset(rows);
    const sc = this.scroller;
    if (this.hasMore && sc.scrollHeight <= sc.clientHeight) void this.older();
    if (this.hasNewer && sc.scrollHeight <= sc.clientHeight) void this.newer();
  }

  /** setNewer says whether the record goes on after the rows loaded; once it does not, the held live entries are shown. */
  private setNewer(hasNewer: boolean): void {
    this.hasNewer = hasNewer;
    this.toNewestButton.hidden = !hasNewer;
    this.log.dataset.newest = String(!hasNewer);
    if (hasNewer) return;
    this.newerRetry.done();
    const held = this.held.filter((e) => e.seq > this.newest);
    this.held = [];
    for (const e of held) this.onEntry(e);
  }

  /**
   * place is where the view is, for opening it again there (after a
   * reconnect): the entry of the row in the middle of the view, or
   * undefined at the live end (the newest page, scrolled to the end). The
   * entry it was opened at while its first page is still asked for.
   */
  place(): string | undefined {
    if (this.early) return this.at;
    if (!this.hasNewer && this.rows.atBottom()) return undefined;
    return this.rows.middle()?.entryId ?? this.at;
  }

  /** showNewest leaves the place the view was opened at for the newest page (the live end). */
  async showNewest(): Promise<void> {
    if (!this.hasNewer) {
      this.rows.toBottom();
      return;
    }
    this.early ??= [];
    await this.first(undefined);
  }

  /**
   * newer appends the page after the newest entry shown (the view was
   * opened at an entry). One that fails is asked for again as an older
   * page is (older): at the very bottom no scroll event would come, and the
   * live entries held for the newest page would never be shown.
   */
  async newer(): Promise<void> {
    if (this.loadingNewer || !this.hasNewer || this.newerRetry.due) return;
    this.loadingNewer = true;
    let got = false;
    try {
      let res: SessionHistoryResult;
      try {
        res = await this.app.client.request("session/history", { sessionId: this.id, afterSeq: this.newest, maxMessages: pageSize });
      } catch (err) {
        if (!this.closed && !(err instanceof ClosedError)) this.newerRetry.failed(err, () => !this.closed && void this.newer());
        return;
      }
      if (this.closed || !this.hasNewer) return;
      this.newerRetry.done();
      await new Promise((resolve) => requestAnimationFrame(resolve));
      if (this.closed || !this.hasNewer) return;
      const rows: Row[] = [];
      for (const e of res.entries) {
        const row = this.rowOf(e, false);
        if (row) rows.push(row);
      }
      this.newest = res.entries.at(-1)?.seq ?? this.newest;
      this.count(res.entries.length);
      // Below the rows loaded, the view staying where it is.
      this.rows.append(rows, false);
      got = res.entries.length > 0;
      this.held = this.held.filter((e) => e.seq > this.newest);
      this.setNewer(res.hasNewer === true && got);
    } finally {
      this.loadingNewer = false;
    }
    const sc = this.scroller;
    if (got && !this.closed && this.hasNewer && sc.scrollHeight - sc.scrollTop - sc.clientHeight < 200) void this.newer();
  }

  /**
   * older prepends the page before the oldest entry shown. One that fails
   * (other than by the connection closing: the reconnect reloads the view)
   * is asked for again after a pause that doubles each time, whatever the
   * view does meanwhile (at the very top no scroll event would come), and
   * the line above the history says so.
   */
  async older(): Promise<void> {
    // A retry is due: not sooner (the scroll events of a view at the top would hammer a failing Bridge).
    if (this.loading || !this.hasMore || this.oldest === undefined || this.olderRetry.due) return;
    this.loading = true;
    let got = false;
    try {
      let res: SessionHistoryResult;
      try {
        res = await this.app.client.request("session/history", { sessionId: this.id, beforeSeq: this.oldest, maxMessages: pageSize });
      } catch (err) {
        if (!this.closed && !(err instanceof ClosedError)) this.olderRetry.failed(err, () => !this.closed && void this.older());
        return;
      }
      if (this.closed) return;
      this.olderRetry.done();
      this.oldest = res.entries[0]?.seq ?? this.oldest;
      this.hasMore = res.hasMore && res.entries.length > 0;
      await this.prepend(res.entries);
      got = res.entries.length > 0;
    } finally {
      this.loading = false;
    }
    // Still near the top after a page (one that added little height, or the
    // view went up meanwhile): the next one now, as no scroll event may come.
    if (got && !this.closed && this.hasMore && this.scroller.scrollTop < 80) void this.older();
  }

  /**
   * prepend puts an older page above the rows loaded, in an animation
   * frame (the frame's layout is the one the rows need). Only the rows
   * that come into view are built and laid out (rows.ts); the view keeps
   * the row it shows at its top where it is.
   */
  private prepend(entries: Entry[]): Promise<void> {
    return new Promise((resolve) =>
      requestAnimationFrame(() => {
        if (!this.closed) {
          const rows: Row[] = [];
          // Newest first, as the pages come: a tool's completion may come before its start.
          for (let i = entries.length - 1; i >= 0; i--) {
            const row = this.rowOf(entries[i], false);
            if (row) rows.push(row);
          }
          rows.reverse();
          this.count(entries.length);
          this.rows.prepend(rows);
        }
        resolve();
      }),
    );
  }

  /**
   * count adds n entries to those received: data-loaded says how many,
   * data-complete whether the oldest is among them (read by the tests and
   * benchmarks, as the rows in the page are only those near the view).
   */
  private count(n: number): void {
    this.loaded += n;
    this.log.dataset.loaded = String(this.loaded);
    this.log.dataset.complete = String(!this.hasMore);
  }

  /**
   * onEntry shows a live entry. Entries are added in batches, once per
   * frame (or every 50 ms in a hidden tab): a turn streaming many entries
   * costs one layout per frame, not one per entry, so the tab keeps up with
   * its WebSocket.
   */
  onEntry(e: Entry): void {
    if (e.seq <= this.newest) return;
    if (this.early) {
      // Shown with the first page asked for (show); as they come too, while it fails.
      this.early.push(e);
      if (this.early.length > 2000) this.early.splice(0, this.early.length - 2000);
      if (this.firstRetry.failures > 0) this.live(e);
      return;
    }
    this.live(e);
  }

  /** live shows a live entry (onEntry's rest), or holds it while the view is not at the live end. */
  private live(e: Entry): void {
    if (e.seq <= this.newest) return;
    if (this.hasNewer) {
      // Not at the live end: forward pages will bring it; held for the
      // race with the last of them (an entry recorded after its read).
      this.held.push(e);
      if (this.held.length > 2000) this.held.splice(0, this.held.length - 2000);
      return;
    }
    this.newest = e.seq;
    this.pending.push(e);
    if (this.pending.length === 1) {
      if (document.hidden) setTimeout(() => this.flush(), 50);
      else requestAnimationFrame(() => this.flush());
    }
  }

  /** flush adds the live entries waiting for the next frame. */
  private flush(): void {
    if (this.pending.length === 0) return;
    const atBottom = this.rows.atBottom();
    // Live, a context.compacted or checkpoint entry shows as recorded
    // until its notification turns it into its card (below).
    const rows: Row[] = [];
    const entries = this.pending.splice(0);
    for (const e of entries) {
      const row = this.rowOf(e, true);
      if (row) rows.push(row);
    }
    this.count(entries.length);
    this.rows.append(rows, atBottom);
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
    // Not at the live end, or a first page asked for: the card comes with its entry's page.
    if (this.hasNewer || this.early) return;
    this.flush();
    const row = this.rows.find(entryId);
    card.dataset.entryId = entryId;
    if (row) {
      card.dataset.seq = String(row.seq);
      this.rows.replace(row, card);
      return;
    }
    this.rows.append([this.rows.row(this.newest, entryId, () => card)], true);
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
   * rowOf is the row of one recorded entry (undefined when it completed a
   * tool card already made), built when first shown. From the history (not live), a
   * context.compacted entry is the "Context compacted" card and a
   * checkpoint entry the "Checkpoint saved" card, built by the same
   * functions as the live cards from the same fields.
   */
  private rowOf(e: Entry, live: boolean): Row | undefined {
    const card = live ? undefined : cardOf(e);
    if (card) {
      card.dataset.entryId = e.id;
      card.dataset.seq = String(e.seq);
      return this.rows.row(e.seq, e.id, () => card);
    }
    if (e.kind === "context.usage" && typeof e.payload?.used === "number" && e.seq >= this.newest) {
      const size = typeof e.payload.size === "number" ? e.payload.size : undefined;
      this.gaugeEl.replaceChildren(gauge(e.payload.used, size));
    }
    const make = this.conversation.row(e);
    return make && this.rows.row(e.seq, e.id, make);
  }

  /** showApprovals draws the approvals waiting for the user in this session. */
  showApprovals(): void {
    const pending = this.app.approvalsFor(this.id);
    this.approvalsEl.replaceChildren(...pending.map((a) => this.approvalCard(a)));
    this.approvalsEl.hidden = pending.length === 0;
  }

  /** approvalCard is one approval: what the harness wants to run and its options. */
  private approvalCard(a: PendingApproval): HTMLElement {
    const tc = a.params.toolCall;
    const title = tc.title || tc.kind || "a tool call";
    const input = tc.rawInput;
    const diff = diffOf(input);
    const shown = diff ?? (input !== undefined ? h("pre", { class: "tool-input" }, typeof input === "string" ? input : JSON.stringify(input, null, 2)) : null);
    return h(
      "div",
      { class: "approval", role: "group", "aria-label": `Approval: ${title}` },
      h("p", {}, h("strong", {}, `${harnessName(this.app.harnessOf(this.id))} asks to run: `), title),
      shown,
      h(
        "div",
        { class: "options" },
        ...a.params.options.map((o) =>
          h("button", { type: "button", class: `option ${o.kind}`, onclick: () => this.app.answer(a, o.optionId) }, o.name),
        ),
      ),
    );
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

  /**
   * send sends what the prompt box holds. Sent while a turn runs, Bridge
   * queues it (session/queueChanged shows it above the box) and runs it
   * when the turns before it have ended.
   */
  async send(): Promise<void> {
    const text = this.text.value;
    if (!text.trim() && this.images.length === 0) return;
    const content: Content[] = [];
    if (text.trim()) content.push({ type: "text", text });
    for (const i of this.images) content.push({ type: "image", mediaType: i.mediaType, data: i.data } as Content);
    this.text.value = "";
    this.images = [];
    clear(this.thumbs);
    // As in chat apps, sending goes to the newest entries, where the prompt and its answer come.
    await this.showNewest();
    await this.run(content);
  }

  /** run sends one prompt and waits for its turn's end. */
  private async run(content: Content[]): Promise<void> {
    const running = this.app.running;
    const sent = (running.get(this.id) ?? 0) + 1;
    running.set(this.id, sent);
    this.app.redraw(this.id);
    if (sent === 1) this.note.textContent = "Running… (Esc cancels)";
    const res = await this.app.guard(this.app.client.request("session/prompt", { sessionId: this.id, content: content as [Content, ...Content[]] }));
    const left = (running.get(this.id) ?? 1) - 1;
    if (left > 0) running.set(this.id, left);
    else running.delete(this.id);
    if (left === 0) this.app.redraw(this.id);
    // Said in the session's view: this one, or the one opened since.
    const view = this.app.current?.id === this.id ? this.app.current : this;
    if (res?.stopReason === "withdrawn") view.turnSays();
    else if (left > 0) view.turnSays("Running the next prompt… (Esc cancels)");
    else view.turnSays(res ? (stopReasons[res.stopReason] ?? `Turn ended: ${res.stopReason}.`) : "Turn failed.");
  }

  /** turnSays says how this page's prompts stand (text), after the entries that came before the answer. */
  private turnSays(text?: string): void {
    if (this.closed) return;
    this.flush();
    if (text !== undefined) this.note.textContent = text;
  }

  /** onQueue shows Bridge's queue of prompts waiting for the running turn. */
  onQueue(items: QueuedPrompt[]): void {
    this.queueEl.hidden = items.length === 0;
    this.queueEl.replaceChildren(
      ...items.map((q) => {
        const label = q.text || `${q.images ?? 0} image(s)`;
        return h(
          "li",
          {},
          h("span", { class: "badge" }, "Queued"),
          " ",
          h("span", { class: "queued-text" }, label.length > 200 ? `${label.slice(0, 200)}…` : label),
          " ",
          h("button", {
            type: "button",
            "aria-label": "Withdraw queued prompt",
            onclick: () => void this.app.guard(this.app.client.request("session/withdraw", { sessionId: this.id, promptId: q.promptId })),
          }, "Withdraw"),
        );
      }),
    );
  }

  async cancel(): Promise<void> {
    await this.app.guard(this.app.client.request("session/cancel", { sessionId: this.id }));
  }

  /** toggleModels opens the model and effort picker (asking the harness what it offers) or closes it. */
  private async toggleModels(button: HTMLElement): Promise<void> {
    const open = this.modelPanel.hidden;
    this.modelPanel.hidden = !open;
    button.setAttribute("aria-expanded", String(open));
    if (!open) return;
    this.modelPanel.replaceChildren(h("p", { class: "hint" }, "Asking the harness which models it offers…"));
    const res = await this.app.guard(this.app.client.request("session/models", { sessionId: this.id }));
    if (!res) {
      this.modelPanel.replaceChildren(h("p", { class: "hint" }, "This harness does not say which models it offers."));
      return;
    }
    this.drawModels(res);
  }

  private drawModels(res: SessionModelsResult): void {
    const model = h("select", { id: "model-select", "aria-label": "Model" });
    model.append(h("option", { value: "" }, "(keep the current model)"));
    for (const m of res.models) {
      const window = m.contextWindow ? ` · ${Math.round(m.contextWindow / 1000)}k context` : "";
      model.append(h("option", { value: m.id }, `${m.name || m.id}${window}${m.id === res.model ? " (current)" : ""}`));
    }
    const effort = h("select", { id: "effort-select", "aria-label": "Effort" });
    const fillEfforts = () => {
      const m = res.models.find((x) => x.id === (model.value || res.model));
      effort.replaceChildren(h("option", { value: "" }, "(keep the current effort)"));
      for (const e of m?.efforts ?? []) effort.append(h("option", { value: e }, `${e}${e === res.effort ? " (current)" : ""}`));
    };
    model.addEventListener("change", fillEfforts);
    fillEfforts();
    const out = h("p", { class: "model-result", role: "status" });
    const current = `Now: ${res.model || "the harness's default model"}${res.effort ? `, effort ${res.effort}` : ""}.`;
    this.modelPanel.replaceChildren(
      h(
        "form",
        {
          "aria-label": "Switch model",
          onsubmit: async (e: Event) => {
            e.preventDefault();
            if (!model.value && !effort.value) return;
            out.textContent = "Switching…";
            const r = await this.app.guard(
              this.app.client.request("session/selectModel", {
                sessionId: this.id,
                ...(model.value ? { model: model.value } : {}),
                ...(effort.value ? { effort: effort.value } : {}),
              }),
            );
            if (!r) {
              out.textContent = "The switch failed (see the status line).";
              return;
            }
            const now = `Now on ${r.model || "the default model"}${r.effort ? `, effort ${r.effort}` : ""}.`;
            const down = r.downgrade
              ? r.checkpointEntryId
                ? " A downgrade: Bridge saved a checkpoint first (before_downgrade), shown in the history."
                : ` A downgrade; no checkpoint was written${r.checkpointNote ? `: ${r.checkpointNote}` : ""}.`
              : "";
            out.textContent = now + down;
            this.note.textContent = now + down;
          },
        },
        h("p", { class: "hint" }, current),
        model,
        effort,
        h("button", { type: "submit" }, "Switch"),
      ),
      out,
    );
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
  return h("li", { class: `card ${cls}` }, h("strong", {}, title), h("p", {}, body));
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
function cardOf(e: Entry): HTMLElement | undefined {
  const str = (v: unknown) => (typeof v === "string" ? v : undefined);
  const num = (v: unknown) => (typeof v === "number" ? v : undefined);
  if (!e.payload) return undefined;
  if (e.kind === "context.compacted") {
    const p = e.payload;
    const harness = str(p.harness);
    const trigger = str(p.trigger);
    if (harness === undefined || trigger === undefined) return undefined;
    return compactedCard({ harness, trigger, preTokens: num(p.preTokens), postTokens: num(p.postTokens), estimated: p.estimated === true });
  }
  if (e.kind === "checkpoint") {
    const p = e.payload;
    const reason = str(p.reason);
    const provenance = str(p.provenance);
    if (reason === undefined || provenance === undefined) return undefined;
    return checkpointCard({ reason, provenance });
  }
  return undefined;
}
