// The Bridge WebUI: sessions, a session's live view, the approvals the
// harnesses ask of the user, migration with the handoff editor, search,
// and the doctor, over bridge web's /rpc. It holds no data of its own:
// everything comes over the WebSocket.

import {
  ClosedError,
  connectWebSocket,
  type BridgeClient,
  type DoctorResult,
  type Entry,
  type SessionChangedNotification,
  type SessionListItem,
  type SessionListResult,
  type SessionRequestPermissionParams,
  type SessionRequestPermissionResult,
  type WebSocketConstructor,
  type WebSocketLike,
} from "../../typescript/src/browser.js";
import { h, append, attr, clear, text, when } from "./dom.js";
import { harnessName } from "./entries.js";
import { SessionView } from "./session.js";
import { renderDoctor } from "./doctor.js";
import { SearchPanel } from "./search.js";

/** listPage is how many sessions one session/list page brings. */
const listPage = 200;

/** PendingApproval is a harness's question (session/requestPermission) waiting for the user. */
export interface PendingApproval {
  params: SessionRequestPermissionParams;
  answer: (r: SessionRequestPermissionResult) => void;
}

/**
 * initializeParams are the page's initialize params; index.html's first
 * script sends the same (as JSON text), and so must be changed with them.
 */
const initializeParams = {
  processId: null,
  clientInfo: { name: "bridge-webui" },
  capabilities: { window: { workDoneProgress: true }, session: { requestPermission: true } },
};

/** BootReply is the reply to one of index.html's first requests: a result or an error. */
interface BootReply {
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

/**
 * Boot is the connection index.html's first script made: the socket, and,
 * when the script sent them (the socket opened before this script ran), the
 * replies to its initialize and session/list requests, by id.
 */
interface Boot {
  socket: WebSocketLike;
  replies?: Map<string, Promise<BootReply>>;
}

/**
 * takeBoot adopts the WebSocket that index.html's first script opens to
 * /rpc at once (window.bridgeBoot), so that the connection is made while the
 * page's main script is still loaded and compiled, and the replies to the
 * requests that script sent once it opened (ids "boot:…"): those are kept
 * from the client, which did not send them. The socket may already be open,
 * or closed (a wrong token), and may have had messages: the adopted socket
 * hands a late listener the events it missed. When the socket had not
 * opened yet, the script sends nothing more and the client initializes.
 * It is taken once, and only for the same URL; undefined when there is none.
 */
function takeBoot(url: string): Boot | undefined {
  const g = globalThis as { bridgeBoot?: { ws: WebSocket; early: string[]; sent?: boolean } };
  const boot = g.bridgeBoot;
  delete g.bridgeBoot;
  if (!boot || boot.ws.url !== url) {
    boot?.ws.close(1000);
    return undefined;
  }
  const { ws } = boot;
  ws.onmessage = null;
  ws.onopen = null;
  const waiting = new Map<string, (r: BootReply) => void>();
  let replies: Map<string, Promise<BootReply>> | undefined;
  if (boot.sent) {
    replies = new Map();
    for (const id of ["boot:initialize", "boot:list"]) replies.set(id, new Promise((resolve) => waiting.set(id, resolve)));
  }
  /** own settles a boot request by its reply; false for every other message. */
  const own = (data: unknown): boolean => {
    if (waiting.size === 0 || typeof data !== "string" || !data.includes('"boot:')) return false;
    let m: { id?: unknown; method?: unknown } & BootReply;
    try {
      m = JSON.parse(data);
    } catch {
      return false;
    }
    const settle = typeof m?.id === "string" && m.method === undefined ? waiting.get(m.id) : undefined;
    if (!settle) return false;
    waiting.delete(m.id as string);
    settle(m);
    return true;
  };
  const early = boot.early.filter((data) => !own(data));
  // Replies still to come are taken by the socket's first listener, and every later listener skips them.
  const mine = new WeakSet<Event>();
  ws.addEventListener("message", (ev) => {
    if (own(ev.data)) mine.add(ev);
  });
  const closed = (): void => {
    for (const settle of waiting.values()) settle({ error: { code: -32099, message: "the connection closed" } });
    waiting.clear();
  };
  if (ws.readyState === WebSocket.CLOSED) closed();
  else ws.addEventListener("close", closed);
  const socket: WebSocketLike = {
    get readyState() {
      return ws.readyState;
    },
    send: (data: string) => ws.send(data),
    close: (code?: number, reason?: string) => ws.close(code, reason),
    addEventListener(type: "open" | "message" | "error" | "close", listener: (event: any) => void): void {
      if (type === "message") {
        for (const data of early) listener(new MessageEvent("message", { data }));
        ws.addEventListener("message", (ev) => mine.has(ev) || listener(ev));
      } else if (type === "open" && ws.readyState === WebSocket.OPEN) queueMicrotask(() => listener(new Event("open")));
      else if (type === "close" && ws.readyState === WebSocket.CLOSED) queueMicrotask(() => listener(new CloseEvent("close", { code: 1006 })));
      else ws.addEventListener(type, listener);
    },
  };
  return { socket, replies };
}

/** bootResult is a boot request's result, or its error thrown. */
async function bootResult<T>(reply: Promise<BootReply> | undefined): Promise<T> {
  const r = await reply;
  if (!r || r.error) throw Object.assign(new Error(r?.error?.message ?? "no reply"), { data: r?.error?.data });
  return r.result as T;
}

/** App is the page's state. */
export class App {
  client!: BridgeClient;
  doctor: DoctorResult | undefined;
  sessions: SessionListItem[] = [];
  /** nextCursor continues the session list past the pages shown; undefined on the last page. */
  nextCursor: string | undefined;
  current: SessionView | undefined;
  /** lastClose is how the WebSocket last closed (code and reason), for the status line. */
  lastClose: { code: number; reason: string } | undefined;
  /** lastError is the last error Bridge reported on this connection (window/logMessage), which says why it closes one that fell behind. */
  lastError: string | undefined;
  private reconnecting = false;
  private refreshSoon: ReturnType<typeof setTimeout> | undefined;
  /** unlisted are sessions whose entries brought a refresh that did not list them (archived ones, with archived hidden). */
  private readonly unlisted = new Set<string>();
  /** running counts, per session, the prompts this page sent not answered yet (running or queued); a session is there while any is. */
  running = new Map<string, number>();
  /** approvals are the questions waiting for the user, oldest first. */
  approvals: PendingApproval[] = [];

  readonly status = h("p", { id: "status", role: "status", "aria-live": "polite" });
  readonly list = h("ul", { id: "session-list", "aria-label": "Session list" });
  readonly moreButton = h("button", { type: "button", id: "more-sessions", hidden: true, onclick: () => void this.more() }, "More sessions");
  readonly main = h("main", { id: "main", "aria-label": "Session" });
  readonly sidebar = h("nav", { id: "sessions", "aria-label": "Sessions" });
  readonly notifyButton = h("button", { type: "button", id: "notify", hidden: true, onclick: () => void this.enableNotifications() }, "Notify me");
  readonly doctorRegion = h("section", { id: "doctor", "aria-label": "Doctor", hidden: true });
  readonly showArchived = h("input", { type: "checkbox", id: "show-archived" });
  readonly harnessSelect = h("select", { id: "new-harness", "aria-label": "Harness", required: true });
  readonly presetSelect = h("select", { id: "new-preset", "aria-label": "Preset" });
  readonly cwdInput = h("input", { id: "new-cwd", "aria-label": "Working directory", placeholder: "/path/to/project", required: true });
  readonly titleInput = h("input", { id: "new-title", "aria-label": "Title", placeholder: "title (optional)" });
  readonly search = new SearchPanel(
    () => this.client,
    (id, entryId) => this.open(id, entryId),
    () => this.showView("search"),
  );

  mount(root: HTMLElement): void {
    const create = h(
      "form",
      { id: "new-session", "aria-label": "New session", onsubmit: (e: Event) => (e.preventDefault(), void this.create()) },
      h("h2", {}, "New session"),
      this.harnessSelect,
      this.presetSelect,
      this.cwdInput,
      this.titleInput,
      h("button", { type: "submit" }, "Create"),
    );
    this.harnessSelect.addEventListener("change", () => this.fillPresets());
    this.showArchived.addEventListener("change", () => void this.refresh(false));
    append(
      this.sidebar,
      h("h2", {}, "Sessions"),
      this.search.root,
      h("label", {}, this.showArchived, " show archived"),
      this.list,
      this.moreButton,
      create,
    );
    append(
      root,
      h(
        "header",
        {},
        h(
          "button",
          {
            type: "button",
            id: "toggle-sidebar",
            "aria-controls": "sessions",
            "aria-expanded": "false",
            onclick: (e: Event) => this.toggleSidebar(e.currentTarget as HTMLElement),
          },
          "☰",
          h("span", { class: "sr-only" }, " Sessions"),
        ),
        h("h1", {}, "Bridge"),
        h(
          "nav",
          { "aria-label": "Views" },
          h("button", { type: "button", id: "show-sessions", onclick: () => this.showView("session") }, "Sessions"),
          h("button", { type: "button", id: "show-doctor", onclick: () => this.showView("doctor") }, "Doctor"),
        ),
        this.notifyButton,
        this.status,
      ),
      this.sidebar,
      this.main,
      this.search.panel,
      this.doctorRegion,
    );
    append(this.main, h("p", { class: "hint" }, "Pick a session, or create one."));
  }

  say(text: string, error = false): void {
    this.status.textContent = text;
    this.status.className = error ? "error" : "";
  }

  showView(which: "session" | "doctor" | "search"): void {
    this.main.hidden = which !== "session";
    this.doctorRegion.hidden = which !== "doctor";
    this.search.panel.hidden = which !== "search";
    document.body.dataset.view = which;
    if (which === "doctor") void this.loadDoctor();
    this.closeSidebar();
  }

  /** toggleSidebar shows or hides the session list on a narrow screen (where it overlays the page). */
  toggleSidebar(button: HTMLElement): void {
    const open = !document.body.classList.contains("sidebar-open");
    document.body.classList.toggle("sidebar-open", open);
    button.setAttribute("aria-expanded", String(open));
  }

  closeSidebar(): void {
    document.body.classList.remove("sidebar-open");
    document.getElementById("toggle-sidebar")?.setAttribute("aria-expanded", "false");
  }

  async start(): Promise<void> {
    const token = new URLSearchParams(location.hash.slice(1)).get("token") ?? "";
    const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/rpc?token=${encodeURIComponent(token)}`;
    try {
      // The session list is asked for right behind initialize (see connect),
      // or was by index.html's first script (listed: its reply).
      await this.connect(url, async (listed) => {
        const first = listed && (await listed.catch(() => undefined));
        if (first) this.setList(first.items, first.nextCursor, false);
        else await this.refresh(false);
        performance.mark("bridge:sessions-shown");
      });
    } catch {
      this.unauthorized(token !== "");
      return;
    }
    // The doctor probes every adapter (it starts their programs): ask for
    // it once the list is on screen (after the frame that shows it; a hidden
    // tab has no frames, hence the timer), so that the two do not compete.
    await new Promise((r) => {
      requestAnimationFrame(() => setTimeout(r));
      setTimeout(r, 1000);
    });
    await this.loadDoctor(false);
    this.say("Connected.");
  }

  /**
   * unauthorized replaces the page's controls with an explanation: without
   * the token bridge web printed, the page can do nothing.
   */
  unauthorized(hadToken: boolean): void {
    const why = hadToken
      ? "Cannot reach Bridge at /rpc: the token is wrong or bridge web has stopped."
      : "No access token: this page needs the exact URL bridge web printed (it ends with #token=…).";
    this.say(why, true);
    document.body.dataset.state = "unauthorized";
    this.sidebar.hidden = true;
    this.search.panel.hidden = true;
    this.doctorRegion.hidden = true;
    this.main.hidden = false;
    this.main.replaceChildren(
      h(
        "section",
        { class: "no-access", "aria-label": "No access" },
        h("h2", {}, "This page is not connected"),
        h("p", {}, why),
        h("p", {}, "Bridge serves its WebUI to whoever holds the token it prints when it starts, so that other pages and programs on this computer cannot drive your agents. Run:"),
        h("pre", {}, "bridge web"),
        h("p", {}, "and open the address it prints, for example http://127.0.0.1:PORT/#token=… (the part after # never leaves your browser)."),
      ),
    );
  }

  /**
   * connect opens /rpc, subscribes and initializes; a later close
   * reconnects. first, when given, runs right after initialize is sent:
   * Bridge reads a connection's messages in order and answers initialize
   * before it reads the next one, so its first request need not wait for
   * that answer (one round trip fewer before the page shows anything).
   * The first connection adopts index.html's socket (takeBoot): when that
   * script sent initialize and the list's first page already, their
   * replies are used (first gets the list's as listed) and nothing is sent
   * again.
   */
  async connect(url: string, first?: (listed?: Promise<SessionListResult>) => Promise<void>): Promise<void> {
    const app = this;
    // Why a connection closed is not part of the client's API: keep the
    // socket's close code and reason, and the error Bridge sends just
    // before closing a connection that fell behind (a window/logMessage).
    // Both are taken here, as the socket delivers them: the client handles
    // notifications later, after it has already reported the close.
    const track = (ws: WebSocketLike): void => {
      ws.addEventListener("close", (ev: CloseEvent) => (app.lastClose = { code: ev.code, reason: ev.reason }));
      ws.addEventListener("message", (ev: MessageEvent) => {
        const data: unknown = ev.data;
        if (typeof data !== "string" || data.length > 4096 || !data.includes('"window/logMessage"')) return;
        try {
          const m = JSON.parse(data) as { method?: unknown; params?: { type?: unknown; message?: unknown } };
          if (m.method === "window/logMessage" && m.params?.type === 1 && typeof m.params.message === "string") app.lastError = m.params.message;
        } catch {
          // not JSON: the client reports it
        }
      });
    };
    class Tracked extends WebSocket {
      constructor(u: string) {
        super(u);
        track(this);
      }
    }
    // The first connection takes the socket index.html opened before this
    // script was parsed and compiled, when it is there for this URL.
    const boot = first ? takeBoot(url) : undefined;
    let WS: WebSocketConstructor = Tracked;
    if (boot) {
      track(boot.socket);
      WS = function () {
        return boot.socket;
      } as unknown as WebSocketConstructor;
    }
    const client = await connectWebSocket(url, { WebSocket: WS });
    this.client = client;
    this.lastClose = undefined;
    this.lastError = undefined;
    client.connection.onClose(() => {
      if (this.client !== client) return;
      const reason = this.lastClose?.reason || this.lastError;
      const why = reason ? `: ${reason}` : "";
      this.say(`Disconnected from Bridge${why}. Reconnecting…`, true);
      document.body.dataset.state = "disconnected";
      void this.reconnect(url);
    });
    // The page answers the harnesses' tool approvals (session/requestPermission).
    client.onRequest("session/requestPermission", (params, token) =>
      new Promise<SessionRequestPermissionResult>((resolve) => {
        const a: PendingApproval = {
          params,
          answer: (r) => {
            this.approvals = this.approvals.filter((x) => x !== a);
            this.approvalsChanged(params.sessionId);
            resolve(r);
          },
        };
        this.approvals.push(a);
        // Answered in another tab, timed out, or the turn was cancelled.
        token.onCancellationRequested(() => a.answer({ outcome: { outcome: "cancelled" } }));
        this.approvalsChanged(params.sessionId);
        this.notifyApproval(params);
      }),
    );
    client.onNotification("session/update", (u) => {
      this.touch(u.sessionId, u.entry);
      if (this.current?.id === u.sessionId) this.current.onEntry(u.entry);
    });
    client.onNotification("session/changed", (n) => this.changed(n));
    client.onNotification("session/queueChanged", (n) => {
      if (this.current?.id === n.sessionId) this.current.onQueue(n.items);
    });
    client.onNotification("session/contextCompacted", (n) => {
      if (this.current?.id === n.sessionId) this.current.onCompacted(n);
    });
    client.onNotification("session/checkpointSaved", (n) => {
      if (this.current?.id === n.sessionId) this.current.onCheckpoint(n);
    });
    client.onNotification("session/restored", (n) => {
      if (this.current?.id === n.sessionId) this.current.banner(n.mode, n.reason, n.nativeError);
    });
    client.onNotification("$/progress", (p) => this.current?.onProgress(p));
    client.onNotification("window/logMessage", (m) => {
      if (m.type === 1 && this.client === client) this.say(`Bridge: ${m.message}`, true);
    });
    client.connection.onRequest("window/workDoneProgress/create", () => null);
    if (first) performance.mark("bridge:ws-open");
    const sent = boot?.replies;
    const init = sent ? bootResult(sent.get("boot:initialize")) : client.initialize(initializeParams as never);
    const listed = sent ? bootResult<SessionListResult>(sent.get("boot:list")) : undefined;
    await Promise.all([init, first?.(listed)]);
    document.body.dataset.state = "connected";
  }

  /** approvalsFor are the approvals waiting in a session. */
  approvalsFor(sessionId: string): PendingApproval[] {
    return this.approvals.filter((a) => a.params.sessionId === sessionId);
  }

  /** harnessOf is a listed session's harness. */
  harnessOf(sessionId: string): string | undefined {
    return this.sessions.find((s) => s.sessionId === sessionId)?.harness;
  }

  /** answer answers an approval with the option the user chose. */
  answer(a: PendingApproval, optionId: string): void {
    a.answer({ outcome: { outcome: "selected", optionId } });
  }

  /** approvalsChanged redraws what shows pending approvals: the session's cards, its row, the title. */
  approvalsChanged(sessionId: string): void {
    if (this.current?.id === sessionId) this.current.showApprovals();
    this.redraw(sessionId);
    const n = this.approvals.length;
    document.title = n > 0 ? `(${n}) Waiting for you — Bridge` : "Bridge";
    this.notifyButton.hidden = n === 0 || typeof Notification === "undefined" || Notification.permission !== "default";
  }

  /** notifyApproval tells a user looking elsewhere that an agent waits (when they allowed notifications). */
  notifyApproval(p: SessionRequestPermissionParams): void {
    if (!document.hidden || typeof Notification === "undefined" || Notification.permission !== "granted") return;
    const s = this.sessions.find((x) => x.sessionId === p.sessionId);
    const n = new Notification(`${harnessName(s?.harness)} is waiting for you`, {
      body: `${s?.title || p.sessionId}: ${p.toolCall.title || p.toolCall.kind || "a tool call"}`,
      tag: `bridge-approval-${p.toolCall.toolCallId}`,
    });
    n.onclick = () => {
      window.focus();
      // The session may be open already (its turn still running): show it as it is.
      if (this.current?.id === p.sessionId) this.showView("session");
      else void this.open(p.sessionId);
      n.close();
    };
  }

  async enableNotifications(): Promise<void> {
    await Notification.requestPermission();
    this.notifyButton.hidden = Notification.permission !== "default";
  }

  /**
   * reconnect opens /rpc again after the connection closed (bridge web
   * closes a tab that fell too far behind; a restart or a network blip does
   * too), then reloads what the page shows: the session list, as many pages
   * as were shown, and the open session. Notifications sent while the page
   * was away are in the record, so the reload shows them.
   */
  async reconnect(url: string): Promise<void> {
    if (this.reconnecting) return;
    this.reconnecting = true;
    const reason = this.lastClose?.reason || this.lastError;
    const why = reason ? ` (Bridge had closed the connection: ${reason})` : "";
    try {
      for (let attempt = 0; ; attempt++) {
        await new Promise((r) => setTimeout(r, Math.min(250 * 2 ** attempt, 5000)));
        try {
          await this.connect(url);
          break;
        } catch {
          this.say(
            attempt < 5
              ? "Disconnected from Bridge. Reconnecting…"
              : "Disconnected from Bridge; still trying. If bridge web was restarted, open the new URL it printed.",
            true,
          );
        }
      }
      await this.refresh();
      // The open session at the place it showed (a search hit stays highlighted), or at its newest entries.
      if (this.current) await this.open(this.current.id, this.current.place(), this.current.hit);
      this.say(`Reconnected${why}: the list and the open session were reloaded.`);
      document.body.dataset.reconnects = String(Number(document.body.dataset.reconnects ?? "0") + 1);
    } finally {
      this.reconnecting = false;
    }
  }

  /**
   * refresh reloads the session list from its first page. With keep, it
   * loads as many pages as were shown, so that a rename or an archive does
   * not take the older sessions away.
   */
  async refresh(keep = true): Promise<void> {
    const want = keep ? this.sessions.length : 0;
    const items: SessionListItem[] = [];
    const seen = new Set<string>();
    let cursor: string | undefined;
    do {
      const res = await this.client.request("session/list", {
        includeArchived: this.showArchived.checked,
        limit: listPage,
        ...(cursor ? { cursor } : {}),
      });
      for (const it of res.items) if (!seen.has(it.sessionId)) (seen.add(it.sessionId), items.push(it));
      cursor = res.nextCursor;
    } while (cursor && items.length < want);
    this.setList(items, cursor, keep);
  }

  /** setList shows sessions as the list, cursor continuing it (refresh's last step). */
  setList(items: SessionListItem[], cursor: string | undefined, keep: boolean): void {
    this.sessions = items;
    this.nextCursor = cursor;
    if (!keep) this.unlisted.clear();
    this.renderList();
  }

  /** more appends the next page of the session list. */
  async more(): Promise<void> {
    const cursor = this.nextCursor;
    if (!cursor) return;
    this.moreButton.disabled = true;
    try {
      const res = await this.guard(this.client.request("session/list", { includeArchived: this.showArchived.checked, limit: listPage, cursor }));
      if (!res || this.nextCursor !== cursor) return;
      const seen = new Set(this.sessions.map((s) => s.sessionId));
      const added = res.items.filter((it) => !seen.has(it.sessionId));
      this.sessions.push(...added);
      this.nextCursor = res.nextCursor;
      if (this.sessions.length === added.length) clear(this.list);
      for (const s of added) this.list.appendChild(this.itemEl(s));
      this.moreButton.hidden = !this.nextCursor;
    } finally {
      this.moreButton.disabled = false;
    }
  }

  // touch notes an entry announced for a session: the list's time, and its
  // status (a session that records entries is live until a session.status
  // entry says it stopped or was suspended). A session the list does not
  // show yet (made in another tab) brings a refresh.
  touch(sessionId: string, e: Entry): void {
    const s = this.sessions.find((x) => x.sessionId === sessionId);
    if (!s) {
      if (this.unlisted.has(sessionId)) return;
      this.unlisted.add(sessionId);
      if (this.refreshSoon === undefined) {
        this.refreshSoon = setTimeout(() => {
          this.refreshSoon = undefined;
          void this.guard(this.refresh());
        }, 500);
      }
      return;
    }
    s.updatedAt = e.createdAt;
    const said = e.kind === "session.status" ? e.payload?.status : undefined;
    s.status = said === "suspended" ? "suspended" : said === "stopped" ? "ended" : "live";
    this.renderItem(s);
  }

  /**
   * changed follows a session renamed or archived elsewhere (another tab,
   * another client, or another process sharing the record): its row takes
   * the new title, and an archived session leaves the list unless archived
   * ones are shown.
   */
  changed(n: SessionChangedNotification): void {
    if (this.current?.id === n.sessionId) this.current.setTitle(n.title || n.sessionId);
    const s = this.sessions.find((x) => x.sessionId === n.sessionId);
    if (!s) return;
    s.title = n.title;
    s.archived = n.archived;
    if (n.archived && !this.showArchived.checked) {
      this.sessions = this.sessions.filter((x) => x !== s);
      this.unlisted.add(n.sessionId);
      this.renderList();
      return;
    }
    this.renderItem(s);
  }

  /** redraw redraws the row of the session with this id, if the list shows it. */
  redraw(sessionId: string): void {
    const s = this.sessions.find((x) => x.sessionId === sessionId);
    if (s) this.renderItem(s);
  }

  /**
   * renderItem updates one session's row in place: only the text and
   * attributes that changed, in the same elements. Every live entry comes
   * here (touch): a row made again would replace the element under the
   * pointer between a press and its release, and the click would be lost.
   */
  renderItem(s: SessionListItem): void {
    for (const li of Array.from(this.list.children)) {
      if ((li as HTMLElement).dataset.session === s.sessionId) {
        this.fills.get(li)?.(s);
        return;
      }
    }
  }

  /**
   * renderList shows this.sessions as the list. A session already shown
   * keeps its row (updated in place, moved only when its place changed):
   * a refresh (a session made in another tab, a rename, an archive) then
   * loses neither a click on a row nor a rename being typed.
   */
  renderList(): void {
    const shown = new Map<string, Element>();
    for (const li of Array.from(this.list.children)) {
      const id = (li as HTMLElement).dataset.session;
      if (id) shown.set(id, li);
    }
    let at = this.list.firstElementChild;
    for (const s of this.sessions) {
      const li = shown.get(s.sessionId) ?? this.itemEl(s);
      this.fills.get(li)?.(s);
      if (li === at) at = li.nextElementSibling;
      else this.list.insertBefore(li, at);
    }
    // What is left is no longer listed.
    while (at) {
      const next = at.nextElementSibling;
      at.remove();
      at = next;
    }
    if (this.sessions.length === 0) this.list.appendChild(h("li", { class: "empty" }, "No sessions yet."));
    this.moreButton.hidden = !this.nextCursor;
  }

  /** fills sets a row's text and attributes from its session, in place (renderItem). */
  private readonly fills = new WeakMap<Element, (s: SessionListItem) => void>();

  /** itemEl is one session's row: title, harness, cwd, status, last activity and actions. */
  itemEl(s: SessionListItem): HTMLElement {
    let cur = s;
    const open = h("button", { type: "button", class: "open", onclick: () => void this.open(cur.sessionId) });
    const badge = h("span", { class: "badge waiting-badge" });
    const harness = h("span", { class: "harness" });
    const cwd = h("span", { class: "cwd" });
    const state = h("span", { class: "state" });
    const time = h("time");
    const rename = h("button", { type: "button", class: "rename", onclick: () => this.rename(cur, item) }, "Rename");
    const archive = h("button", { type: "button", class: "archive", onclick: () => void this.archive(cur) }, "Archive");
    const item = h("li", { "data-session": s.sessionId }, open, harness, cwd, state, time, rename);
    const fill = (s: SessionListItem): void => {
      cur = s;
      const status = s.archived
        ? "archived"
        : this.running.has(s.sessionId)
          ? "running"
          : s.status + (s.restoreMode ? ` (${s.restoreMode})` : "");
      const waiting = this.approvalsFor(s.sessionId).length;
      const title = s.title || s.sessionId;
      item.classList.toggle("current", this.current?.id === s.sessionId);
      item.classList.toggle("waiting", waiting > 0);
      attr(open, "aria-label", `Open ${title}`);
      text(open, title);
      text(badge, `Waiting for you (${waiting})`);
      if (!waiting) badge.remove();
      else if (!badge.isConnected) open.after(badge);
      attr(harness, "title", s.harness);
      text(harness, harnessName(s.harness));
      text(cwd, s.cwd ?? "");
      text(state, status);
      attr(time, "datetime", s.updatedAt);
      text(time, when(s.updatedAt));
      attr(rename, "aria-label", `Rename ${title}`);
      attr(archive, "aria-label", `Archive ${title}`);
      if (s.archived) archive.remove();
      else if (!archive.isConnected) rename.after(archive);
    };
    fill(s);
    this.fills.set(item, fill);
    return item;
  }

  /** rename opens the row's rename form (once: Rename again goes back to it; Escape closes it). */
  rename(s: SessionListItem, item: HTMLElement): void {
    const open = item.querySelector<HTMLInputElement>(".rename-form input");
    if (open) return open.focus();
    const input = h("input", { "aria-label": "New title", value: s.title ?? "" });
    input.addEventListener("keydown", (e) => e.key === "Escape" && form.remove());
    const form = h(
      "form",
      {
        class: "rename-form",
        onsubmit: async (e: Event) => {
          e.preventDefault();
          await this.guard(this.client.request("session/rename", { sessionId: s.sessionId, title: input.value }));
          await this.refresh();
          if (this.current?.id === s.sessionId) this.current.setTitle(input.value);
        },
      },
      input,
      h("button", { type: "submit" }, "Save"),
    );
    item.appendChild(form);
    input.focus();
  }

  async archive(s: SessionListItem): Promise<void> {
    await this.guard(this.client.request("session/archive", { sessionId: s.sessionId }));
    await this.refresh();
  }

  async loadDoctor(render = true): Promise<void> {
    const rep = await this.guard(this.client.request("bridge/doctor", {}));
    if (!rep) return;
    this.doctor = rep;
    const chosen = this.harnessSelect.value;
    clear(this.harnessSelect);
    for (const a of rep.adapters) {
      if (a.installed) this.harnessSelect.appendChild(h("option", { value: a.harness }, harnessName(a.harness)));
    }
    if (chosen) this.harnessSelect.value = chosen;
    else if (rep.adapters.some((a) => a.harness === "fake" && a.installed)) this.harnessSelect.value = "fake";
    this.fillPresets();
    if (render) renderDoctor(this.doctorRegion, rep);
  }

  fillPresets(): void {
    clear(this.presetSelect);
    this.presetSelect.appendChild(h("option", { value: "" }, "(default preset)"));
    const a = this.doctor?.adapters.find((x) => x.harness === this.harnessSelect.value);
    for (const p of a?.presets ?? []) this.presetSelect.appendChild(h("option", { value: p }, p));
  }

  async create(): Promise<void> {
    const res = await this.guard(
      this.client.request("session/create", {
        harness: this.harnessSelect.value,
        cwd: this.cwdInput.value,
        ...(this.presetSelect.value ? { preset: this.presetSelect.value } : {}),
        ...(this.titleInput.value ? { title: this.titleInput.value } : {}),
      }),
    );
    if (!res) return;
    await this.refresh();
    await this.open(res.sessionId);
  }

  /**
   * open shows a session: its newest entries, or (at, a search hit's entry,
   * or where the view was) the entries around that one; hit (at, unless
   * said) is highlighted.
   */
  async open(sessionId: string, at?: string, hit = at): Promise<void> {
    this.closeSidebar();
    performance.clearMarks("bridge:open-start");
    performance.clearMarks("bridge:newest-shown");
    performance.mark("bridge:open-start");
    this.showView("session");
    this.current?.close();
    const item = this.sessions.find((s) => s.sessionId === sessionId);
    this.current = new SessionView(this, sessionId, item, at, hit);
    clear(this.main);
    this.main.appendChild(this.current.root);
    for (const li of Array.from(this.list.children)) {
      const el = li as HTMLElement;
      el.classList.toggle("current", el.dataset.session === sessionId);
    }
    await this.current.load();
    performance.mark("bridge:newest-shown");
  }

  /** forkFrom starts a session on the harness chosen under "New session" from a session's record up to entryId, and opens it. */
  async forkFrom(sessionId: string, entryId: string): Promise<void> {
    this.say("Forking…");
    const res = await this.guard(
      this.client.request("session/fork", { sessionId, entryId, target: this.harnessSelect.value ? { harness: this.harnessSelect.value } : {} }),
    );
    if (!res) return;
    this.say(`Forked into ${res.harness} session ${res.sessionId} (${res.projectedEntries} entries carried).`);
    await this.refresh();
    await this.open(res.sessionId);
  }

  /** guard runs a request and reports its failure in the status line. */
  async guard<T>(p: Promise<T>): Promise<T | undefined> {
    try {
      return await p;
    } catch (err) {
      // The connection closed: the status line says so, and the page
      // reconnects and reloads what the request would have changed.
      if (err instanceof ClosedError) return undefined;
      const e = err as { message?: string; data?: { code?: string } };
      this.say(`Error${e.data?.code ? ` (${e.data.code})` : ""}: ${e.message ?? String(err)}`, true);
      return undefined;
    }
  }
}

performance.mark("bridge:script-start");
const app = new App();
(globalThis as { bridgeApp?: App }).bridgeApp = app;
// The WebSocket opens first (start's first step), the page is built while it connects.
void app.start();
app.mount(document.getElementById("app") ?? document.body);
