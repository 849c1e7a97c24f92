// How a session's recorded entries read in the page: messages with their
// speaker (You, or the harness by name), tool calls as collapsible cards
// (an edit as a diff where the record has the old and new text), plans as
// checklists, context readings as bars, approvals and their answers, and
// the rest as short sentences with the recorded payload on demand. Text is
// always set as text.

import type { ApprovalResolvedPayload, Entry } from "../../typescript/src/browser.js";
import { count, h, when, type Child } from "./dom.js";
import { renderMarkdown } from "./markdown.js";

/** harnessNames are the harnesses' names as people know them. */
const harnessNames: Record<string, string> = {
  "claude-code": "Claude Code",
  codex: "Codex",
  opencode: "OpenCode",
  acp: "ACP agent",
  dsh: "DeepSeek Harness",
  fake: "Fake agent",
  rpchost: "Hosted agent",
};

/** harnessName is a harness's name as people know it. */
export function harnessName(harness: string | undefined): string {
  return harness ? (harnessNames[harness] ?? harness) : "Agent";
}

/** foldAbove is the length of a message above which it shows its beginning, with the rest on demand. */
const foldAbove = 4_000;

/** shownOutput bounds the characters of one tool input or output put in the page (the rest is counted). */
const shownOutput = 8_000;

type Payload = Record<string, unknown>;
/** ToolEntry is a tool call's start or end. */
type ToolEntry = Extract<Entry, { kind: "tool.started" | "tool.completed" }>;
/** MessageEntry is what the user or the agent said. */
type MessageEntry = Extract<Entry, { kind: "user.message" | "assistant.message" }>;
const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === "number" && isFinite(v) ? v : undefined);

/** clip bounds a text for the page, saying how much was left out. */
function clip(text: string, max = shownOutput): string {
  return text.length <= max ? text : `${text.slice(0, max)}\n… (${text.length - max} more characters)`;
}

/** asText shows a payload value: strings as they are, anything else as indented JSON. */
function asText(v: unknown): string {
  return typeof v === "string" ? v : JSON.stringify(v, null, 2) ?? "";
}

/** EntryActions are what a message row offers on hover or focus. */
export interface EntryActions {
  fork(entryId: string): void;
}

/**
 * Conversation turns entries into rows. It remembers tool cards by tool
 * id, so that a tool's start and its completion (live, or in either order
 * when pages of history arrive) make one card.
 */
export class Conversation {
  private readonly tools = new Map<string, ToolCard>();

  constructor(
    private readonly harness: string,
    private readonly actions: EntryActions,
  ) {}

  /**
   * row is how to build e's row (built only when the row is first shown),
   * or undefined when e completed a tool card already made.
   */
  row(e: Entry): (() => HTMLElement) | undefined {
    // A recorded payload is typed by its kind, and still checked as it is
    // read: the record may hold what an older or newer Bridge wrote.
    if (!e.payload) e = { ...e, payload: {} } as Entry;
    if (e.kind === "tool.started" || e.kind === "tool.completed") {
      const id = str(e.payload.toolId) ?? e.id;
      const known = this.tools.get(id);
      if (known) {
        known.add(e);
        return undefined;
      }
      const card = new ToolCard(e);
      this.tools.set(id, card);
      return () => card.root;
    }
    const entry = e;
    return () => this.build(entry);
  }

  /** build is the row of an entry other than a tool call's. */
  private build(e: Exclude<Entry, ToolEntry>): HTMLElement {
    const kind: string = e.kind;
    const li = h("li", { class: `entry kind-${kind.replace(/[^a-z0-9]+/gi, "-")}`, "data-seq": String(e.seq), "data-entry-id": e.id });
    switch (e.kind) {
      case "user.message":
      case "assistant.message":
        this.message(li, e);
        break;
      case "approval.requested": {
        const p = e.payload;
        li.classList.add("event");
        li.append(line("⚑", `${harnessName(str(p.harness) ?? this.harness)} asked: ${str(p.title) ?? str(p.kind) ?? "a tool call"}`, e));
        break;
      }
      case "approval.resolved":
        li.classList.add("event", e.payload.allowed === true ? "allowed" : "refused");
        li.append(line(e.payload.allowed === true ? "✓" : "✗", resolution(e.payload), e));
        break;
      case "plan.updated":
        li.classList.add("event");
        li.append(line("☰", "Plan", e), plan(e.payload.steps));
        break;
      case "context.usage":
        li.classList.add("event");
        li.append(gauge(num(e.payload.used), num(e.payload.size)));
        break;
      default:
        li.classList.add("event");
        li.append(line("•", describe(e), e));
        li.append(h("details", { class: "payload" }, h("summary", {}, "Details"), h("pre", {}, clip(asText(e.payload)))));
    }
    return li;
  }

  private message(li: HTMLElement, e: MessageEntry): void {
    const p = e.payload;
    const mine = e.kind === "user.message";
    li.classList.add("msg");
    li.append(
      h(
        "div",
        { class: "meta" },
        h("span", { class: "speaker" }, mine ? "You" : harnessName(this.harness)),
        h("time", { datetime: e.createdAt }, when(e.createdAt)),
      ),
    );
    const text = str(p.text) ?? "";
    if (mine && text.startsWith("Bridge checkpoint request")) {
      // Bridge's own prompt asking the harness for a checkpoint, not the user's.
      (li.querySelector(".speaker") as HTMLElement).textContent = "Bridge";
      li.append(h("details", { class: "bridge-prompt" }, h("summary", {}, text.split("\n", 1)[0]), h("div", { class: "text" }, text)));
    } else {
      // A long message shows its beginning, and the rest on demand: laying
      // out megabytes of text would stall the tab.
      const body = (t: string) => (mine ? h("div", { class: "text" }, t) : h("div", { class: "md" }, renderMarkdown(t)));
      if (text.length <= foldAbove) li.append(body(text));
      else {
        const head = body(`${text.slice(0, foldAbove)}…`);
        const more = h("button", { type: "button", class: "show-all" }, `Show all ${count(text.length)} characters`);
        more.addEventListener("click", () => {
          head.replaceWith(body(text));
          more.remove();
        });
        li.append(head, more);
      }
    }
    const attachments = e.kind === "user.message" ? e.payload.attachments : undefined;
    const images = Array.isArray(attachments) ? attachments.length : 0;
    if (images > 0) li.append(h("span", { class: "images" }, `${images} image(s)`));
    // Per-message actions: shown on hover or focus (CSS).
    li.append(
      h(
        "div",
        { class: "row-actions" },
        h("button", { type: "button", class: "copy-msg", "aria-label": `Copy message ${e.seq}`, onclick: () => void navigator.clipboard?.writeText(text) }, "Copy"),
        h("button", { type: "button", class: "fork", "aria-label": `Fork from here (entry ${e.seq})`, onclick: () => this.actions.fork(e.id) }, "Fork from here"),
      ),
    );
  }
}

/** line is an event row's one sentence, with its time. */
function line(icon: string, text: string, e: Entry): HTMLElement {
  return h("div", { class: "line" }, h("span", { class: "icon", "aria-hidden": "true" }, icon), h("span", {}, text), " ", h("time", { datetime: e.createdAt }, when(e.createdAt)));
}

/** resolution says how an approval was answered, and by whom. */
function resolution(p: ApprovalResolvedPayload): string {
  const kinds: Record<string, string> = {
    allow_once: "Allowed once",
    allow_always: "Allowed always",
    reject_once: "Rejected once",
    reject_always: "Rejected always",
  };
  const what = kinds[str(p.optionKind) ?? ""] ?? (p.allowed === true ? "Allowed" : "Rejected");
  const by = str(p.by);
  const who = by === "user" ? "by you" : by === "timeout" ? "after no answer came (the preset's policy)" : by === "policy" ? "by the preset's policy" : by ? `by ${by}` : "";
  const extra = [p.remembered === true ? "remembered from an earlier “always”" : "", p.cancelled === true ? "the request was withdrawn" : "", str(p.reason) ?? ""].filter(Boolean);
  return `${what}${who ? ` ${who}` : ""}${extra.length ? ` — ${extra.join("; ")}` : ""}.`;
}

/** plan is a plan's steps as a checklist. */
function plan(steps: unknown): HTMLElement {
  const list = h("ul", { class: "plan", "aria-label": "Plan" });
  for (const s of Array.isArray(steps) ? steps : []) {
    const st = (s ?? {}) as Payload;
    const status = str(st.status) ?? "pending";
    const mark = status === "completed" ? "☑" : status === "in_progress" ? "◐" : "☐";
    const label = status === "completed" ? "done" : status === "in_progress" ? "in progress" : "to do";
    list.append(
      h("li", { "data-status": status }, h("span", { class: "check", "aria-hidden": "true" }, mark), " ", str(st.text) ?? str(st.step) ?? "", h("span", { class: "sr-only" }, ` (${label})`)),
    );
  }
  return list;
}

/** gauge is a context reading as a bar. */
export function gauge(used: number | undefined, size: number | undefined): HTMLElement {
  if (used === undefined) return h("span", { class: "gauge" }, "Context: no reading");
  const label = size ? `Context: ${count(used)} of ${count(size)} tokens (${Math.round((100 * used) / size)}%)` : `Context: ${count(used)} tokens`;
  return h(
    "div",
    { class: "gauge" },
    size ? h("meter", { min: 0, max: size, value: Math.min(used, size), low: size * 0.6, high: size * 0.85, optimum: 0, "aria-label": label }) : null,
    h("span", {}, label),
  );
}

/** describe is a short sentence for an entry shown as an event. */
function describe(e: Entry): string {
  const kind: string = e.kind;
  switch (e.kind) {
    case "session.status":
      return `Session ${str(e.payload.status) ?? "changed"}${str(e.payload.error) ? `: ${str(e.payload.error)}` : ""}.`;
    case "session.forked": {
      const p = e.payload;
      return `Forked from session ${str(p.sourceSessionId) ?? "?"} at entry ${str(p.sourceEntryId) ?? "?"}${str(p.sourceHarness) ? ` (${harnessName(str(p.sourceHarness))})` : ""}.`;
    }
    case "session.restored":
      return `Resumed (${str(e.payload.mode) ?? "?"})${str(e.payload.reason) ? `: ${str(e.payload.reason)}` : ""}.`;
    case "session.resume_failed":
      return `Resume failed: ${str(e.payload.error) ?? str(e.payload.reason) ?? "?"}.`;
    case "model.changed":
      return `Model changed to ${str(e.payload.model) ?? "?"}.`;
    case "effort.changed":
      return `Effort changed to ${str(e.payload.effort) ?? "?"}.`;
    case "artifact.created":
      return `Created ${str(e.payload.path) ?? "a file"}.`;
    case "worker.result":
      return `Worker finished (${str(e.payload.status) ?? "?"}).`;
    case "migration.handoff":
      return `Migrated from session ${str(e.payload.sourceSessionId) ?? "?"} with a handoff.`;
    case "compaction.requested":
      return `Compaction requested (${str(e.payload.reason) ?? "?"}).`;
    case "compaction":
      return "Compacted from a checkpoint.";
    case "compaction.failed":
      return `Compaction failed: ${str(e.payload.reason) ?? "?"}.`;
    case "branch.summary":
      return "Branch summary.";
    case "checkpoint":
      return `Checkpoint (${str(e.payload.reason) ?? "?"}).`;
    case "context.compacted":
      return "Context compacted.";
    case "harness.event":
      return `Harness event: ${str(e.payload.type) ?? "?"}.`;
    default:
      return kind;
  }
}

/**
 * ToolCard is one tool call: name, input summary, status and duration,
 * with its input and output on demand. Its element is built when first
 * asked for (the row is shown), and kept up to date afterwards.
 */
class ToolCard {
  private el: HTMLElement | undefined;
  private readonly summary = h("summary");
  private readonly body = h("div", { class: "tool-body" });
  private first: Entry;
  private started: Entry | undefined;
  private completed: Entry | undefined;
  private name = "";
  private input: unknown;
  private output: unknown;
  private failed = false;

  constructor(e: ToolEntry) {
    this.first = e;
    this.add(e);
  }

  /** root is the card's row. */
  get root(): HTMLElement {
    if (!this.el) {
      this.el = h("li", { class: "entry tool" }, h("details", {}, this.summary, this.body));
      this.sync();
    }
    return this.el;
  }

  add(e: ToolEntry): void {
    this.name = str(e.payload.name) ?? (this.name || "tool");
    if (e.kind === "tool.started") {
      this.started = e;
      this.first = e;
      this.input = e.payload.input;
    } else {
      const p = e.payload;
      this.completed = e;
      this.output = p.output ?? p.content ?? p.result;
      this.failed = p.isError === true || p.status === "failed" || p.status === "error";
      if (this.input === undefined && p.input !== undefined) this.input = p.input;
    }
    if (this.el) this.sync();
  }

  /** sync shows the card's state in its element. */
  private sync(): void {
    const el = this.el!;
    el.dataset.seq = String(this.first.seq);
    el.dataset.entryId = this.first.id;
    el.classList.toggle("kind-tool-started", this.started !== undefined);
    el.classList.toggle("kind-tool-completed", this.completed !== undefined);
    el.classList.toggle("failed", this.failed);
    this.draw();
  }

  private draw(): void {
    const status = !this.completed ? "running" : this.failed ? "failed" : "done";
    let duration = "";
    if (this.started && this.completed) {
      const ms = Date.parse(this.completed.createdAt) - Date.parse(this.started.createdAt);
      if (isFinite(ms) && ms >= 0) duration = ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
    }
    this.summary.replaceChildren(
      h("span", { class: "tool-name" }, this.name),
      h("span", { class: "tool-summary" }, inputSummary(this.input)),
      h("span", { class: `tool-status ${status}` }, status),
      h("span", { class: "tool-duration" }, duration),
    );
    const parts: Child[] = [];
    const diff = diffOf(this.input);
    if (diff) parts.push(diff);
    else if (this.input !== undefined) parts.push(h("pre", { class: "tool-input", "aria-label": "Input" }, clip(asText(this.input))));
    if (this.output !== undefined) parts.push(h("pre", { class: "tool-output", "aria-label": "Output" }, clip(asText(this.output))));
    this.body.replaceChildren(...(parts.filter(Boolean) as Node[]));
  }
}

/** inputSummary is a tool input in a few words: its command, path, pattern or first line. */
function inputSummary(input: unknown): string {
  let s = "";
  if (typeof input === "string") s = input;
  else if (input && typeof input === "object") {
    const o = input as Payload;
    for (const k of ["command", "cmd", "file_path", "filePath", "path", "pattern", "url", "query", "description", "prompt"]) {
      const v = o[k];
      if (typeof v === "string" && v) {
        s = v;
        break;
      }
      if (Array.isArray(v) && v.every((x) => typeof x === "string")) {
        s = v.join(" ");
        break;
      }
    }
    if (!s) s = JSON.stringify(o) ?? "";
  }
  const first = s.split("\n", 1)[0] ?? "";
  return first.length > 120 ? `${first.slice(0, 120)}…` : first;
}

/**
 * diffOf shows an edit's input as a diff: old and new text (Claude Code's
 * Edit and MultiEdit, OpenCode's edit) or a patch (Codex's apply_patch);
 * undefined for any other input.
 */
export function diffOf(input: unknown): HTMLElement | undefined {
  if (typeof input === "string") {
    return /^(\*\*\* Begin Patch|diff --git|--- |@@ )/m.test(input) ? patch(input) : undefined;
  }
  if (!input || typeof input !== "object") return undefined;
  const o = input as Payload;
  if (typeof o.patch === "string" || typeof o.input === "string") {
    const text = str(o.patch) ?? str(o.input) ?? "";
    if (/^(\*\*\* Begin Patch|diff --git|--- |@@ )/m.test(text)) return patch(text);
  }
  const edits: { old: string; new: string }[] = [];
  const pair = (x: Payload) => {
    const a = str(x.old_string) ?? str(x.oldString);
    const b = str(x.new_string) ?? str(x.newString);
    if (a !== undefined && b !== undefined) edits.push({ old: a, new: b });
  };
  pair(o);
  if (Array.isArray(o.edits)) for (const x of o.edits) if (x && typeof x === "object") pair(x as Payload);
  if (edits.length === 0) return undefined;
  const file = str(o.file_path) ?? str(o.filePath) ?? str(o.path);
  const pre = h("pre", { class: "diff", "aria-label": `Diff${file ? ` of ${file}` : ""}` });
  for (const ed of edits) {
    if (pre.childNodes.length > 0) pre.append(h("span", { class: "hunk" }, "⋯\n"));
    for (const [sign, text] of lineDiff(ed.old, ed.new)) pre.append(h("span", { class: sign === "-" ? "del" : sign === "+" ? "ins" : "ctx" }, `${sign} ${text}\n`));
  }
  return h("div", { class: "tool-diff" }, file ? h("div", { class: "file" }, file) : null, pre);
}

/** patch shows a patch's lines, added and removed ones marked. */
function patch(text: string): HTMLElement {
  const pre = h("pre", { class: "diff", "aria-label": "Patch" });
  for (const l of clip(text).split("\n")) {
    const cls = l.startsWith("+") && !l.startsWith("+++") ? "ins" : l.startsWith("-") && !l.startsWith("---") ? "del" : "ctx";
    pre.append(h("span", { class: cls }, `${l}\n`));
  }
  return h("div", { class: "tool-diff" }, pre);
}

/**
 * lineDiff compares two texts by lines: the lines they share at the start
 * and end (up to three of each as context), and between them the old lines
 * removed and the new ones added. Linear in the texts.
 */
export function lineDiff(a: string, b: string): ["-" | "+" | " ", string][] {
  const x = clip(a).split("\n");
  const y = clip(b).split("\n");
  let start = 0;
  while (start < x.length && start < y.length && x[start] === y[start]) start++;
  let end = 0;
  while (end < x.length - start && end < y.length - start && x[x.length - 1 - end] === y[y.length - 1 - end]) end++;
  const out: ["-" | "+" | " ", string][] = [];
  for (const l of x.slice(Math.max(0, start - 3), start)) out.push([" ", l]);
  for (const l of x.slice(start, x.length - end)) out.push(["-", l]);
  for (const l of y.slice(start, y.length - end)) out.push(["+", l]);
  for (const l of x.slice(x.length - end, x.length - end + 3)) out.push([" ", l]);
  return out;
}
