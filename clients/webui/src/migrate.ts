// Migration: preview (target harness, preset, model, effort) with progress,
// then the five-part handoff in a lossless editor (Text, and a rendered
// Markdown view) whose headings are checked live by the client package's
// parser, then execute with the edited text inline, and open the target.

import { handoffHeadings, parseHandoff, summaryChars, type MigrationPreviewResult, type ProgressParams, type SessionListItem } from "../../typescript/src/browser.js";
import type { App } from "./main.js";
import type { SessionView } from "./session.js";
import { clear, h } from "./dom.js";
import { renderMarkdown } from "./markdown.js";

let tokens = 0;

export class MigrationPanel {
  readonly root = h("section", { id: "migration", "aria-label": "Migration", hidden: true });
  private readonly harness = h("select", { id: "mig-harness", "aria-label": "Target harness" });
  private readonly preset = h("select", { id: "mig-preset", "aria-label": "Target preset" });
  private readonly model = h("input", { id: "mig-model", "aria-label": "Target model", placeholder: "model (optional)" });
  private readonly effort = h("input", { id: "mig-effort", "aria-label": "Target effort", placeholder: "effort (optional)" });
  private readonly previewButton = h("button", { type: "submit", id: "mig-preview" }, "Preview");
  private readonly progress = h("progress", { id: "mig-progress", "aria-label": "Preview progress", hidden: true });
  private readonly progressText = h("span", { id: "mig-progress-text", role: "status" });
  private readonly editor = h("section", { id: "handoff", "aria-label": "Handoff", hidden: true });
  private readonly textArea = h("textarea", { id: "handoff-text", "aria-label": "Handoff text", rows: 18, spellcheck: false });
  private readonly rendered = h("div", { id: "handoff-rendered", "aria-label": "Rendered handoff", role: "document", hidden: true });
  private readonly checks = h("ul", { id: "handoff-checks", "aria-label": "Handoff sections" });
  private readonly count = h("p", { id: "handoff-count", role: "status" });
  private readonly overBudget = h("input", { type: "checkbox", id: "mig-over-budget" });
  private readonly overBudgetLabel = h("label", { hidden: true }, this.overBudget, " send it over its budget anyway");
  private readonly cont = h("input", { type: "checkbox", id: "mig-continue" });
  private readonly warnings = h("ul", { id: "mig-warnings", "aria-label": "Migration warnings" });
  private readonly executeButton = h("button", { type: "button", id: "mig-execute", onclick: () => void this.execute() }, "Execute migration");
  private preview: MigrationPreviewResult | undefined;
  private token = "";

  constructor(
    private readonly app: App,
    private readonly session: SessionView,
    private readonly source: SessionListItem | undefined,
  ) {
    this.harness.addEventListener("change", () => this.fillPresets());
    this.textArea.addEventListener("input", () => this.check());
    const tabText = h("button", { type: "button", role: "tab", id: "tab-text", "aria-selected": "true" }, "Text");
    const tabRendered = h("button", { type: "button", role: "tab", id: "tab-rendered", "aria-selected": "false" }, "Rendered");
    const select = (rendered: boolean) => {
      tabText.setAttribute("aria-selected", String(!rendered));
      tabRendered.setAttribute("aria-selected", String(rendered));
      this.textArea.hidden = rendered;
      this.rendered.hidden = !rendered;
      if (rendered) {
        clear(this.rendered);
        this.rendered.appendChild(renderMarkdown(this.textArea.value));
      }
    };
    tabText.addEventListener("click", () => select(false));
    tabRendered.addEventListener("click", () => select(true));
    this.editor.append(
      h("h3", {}, "Handoff"),
      h("div", { role: "tablist", "aria-label": "Handoff view" }, tabText, tabRendered),
      this.textArea,
      this.rendered,
      this.checks,
      this.count,
      this.overBudgetLabel,
      this.warnings,
      h("label", {}, this.cont, " let the target continue after restating (otherwise it restates and waits)"),
      this.executeButton,
    );
    this.root.append(
      h("h3", {}, "Migrate this task"),
      h(
        "form",
        { id: "mig-form", "aria-label": "Migration target", onsubmit: (e: Event) => (e.preventDefault(), void this.runPreview()) },
        this.harness,
        this.preset,
        this.model,
        this.effort,
        this.previewButton,
        this.progress,
        this.progressText,
      ),
      this.editor,
    );
  }

  toggle(): void {
    this.root.hidden = !this.root.hidden;
    if (!this.root.hidden) {
      this.fillHarnesses();
      // Preview waits for the default target.
      this.previewButton.disabled = true;
      void this.defaultTarget().finally(() => (this.previewButton.disabled = false));
    }
  }

  /**
   * The form never starts on a target Bridge refuses (the source's own
   * harness and preset, with no model or effort): it then proposes another
   * model of the session's harness, else another usable harness.
   */
  private async defaultTarget(): Promise<void> {
    const refused = () => this.harness.value === "" && this.preset.value === (this.source?.preset ?? "") && !this.model.value && !this.effort.value;
    if (!refused()) return;
    const res = await this.app.client.request("session/models", { sessionId: this.session.id }).catch(() => undefined);
    if (!refused()) return;
    const model = res?.models.find((m) => m.id !== res.model);
    if (model) {
      this.model.value = model.id;
      return;
    }
    const other = this.app.doctor?.adapters.find((a) => a.ok && a.harness !== this.source?.harness);
    if (other) {
      this.harness.value = other.harness;
      this.fillPresets();
    }
  }

  private fillHarnesses(): void {
    const keep = this.harness.value;
    clear(this.harness);
    this.harness.appendChild(h("option", { value: "" }, "(same harness)"));
    for (const a of this.app.doctor?.adapters ?? []) if (a.installed) this.harness.appendChild(h("option", { value: a.harness }, a.harness));
    this.harness.value = keep;
    this.fillPresets();
  }

  private fillPresets(): void {
    clear(this.preset);
    this.preset.appendChild(h("option", { value: "" }, "(default preset)"));
    const a = this.app.doctor?.adapters.find((x) => x.harness === this.harness.value);
    for (const p of a?.presets ?? []) this.preset.appendChild(h("option", { value: p }, p));
  }

  onProgress(p: ProgressParams): void {
    if (String(p.token) !== this.token) return;
    const v = p.value as { kind?: string; message?: string; percentage?: number; title?: string };
    this.progress.hidden = v.kind === "end";
    if (typeof v.percentage === "number") this.progress.value = v.percentage / 100;
    this.progressText.textContent = v.kind === "end" ? "" : v.message ?? v.title ?? "";
  }

  async runPreview(): Promise<void> {
    this.token = `webui-migration-${++tokens}`;
    this.progress.hidden = false;
    this.progress.removeAttribute("value");
    this.progressText.textContent = "Writing the handoff…";
    const target = {
      ...(this.harness.value ? { harness: this.harness.value } : {}),
      ...(this.preset.value ? { preset: this.preset.value } : {}),
      ...(this.model.value ? { model: this.model.value } : {}),
      ...(this.effort.value ? { effort: this.effort.value } : {}),
    };
    const res = await this.app.guard(
      this.app.client.request("migration/preview", { sessionId: this.session.id, target, workDoneToken: this.token }),
    );
    this.progress.hidden = true;
    this.progressText.textContent = res ? "Preview ready: review and edit the handoff." : "Preview failed.";
    if (!res) return;
    this.preview = res;
    this.textArea.value = res.summary;
    clear(this.warnings);
    for (const w of res.warnings) this.warnings.appendChild(h("li", {}, w));
    this.editor.hidden = false;
    this.check();
  }

  /** check shows, live, which of the five headings the text has. */
  check(): void {
    const parsed = parseHandoff(this.textArea.value);
    clear(this.checks);
    const lang = parsed.lang === "zh" ? "zh" : "en";
    const parts = ["goal", "currentState", "keyDecisions", "keyFiles", "nextStep"] as const;
    let complete = true;
    parts.forEach((part, i) => {
      const ok = parsed.sections[part] !== undefined && parsed.sections[part]!.body !== "";
      complete &&= ok;
      this.checks.appendChild(h("li", { class: ok ? "ok" : "bad", "data-part": part }, ok ? "✓ " : "✗ ", handoffHeadings[lang][i]));
    });
    for (const p of parsed.problems) this.checks.appendChild(h("li", { class: "problem" }, p));
    this.editor.dataset.valid = String(parsed.problems.length === 0);
    // A handoff missing a section is not executed: the target would lack it.
    this.executeButton.disabled = !complete || parsed.problems.length > 0;
    this.executeButton.title = this.executeButton.disabled ? "Every section needs a heading and some text first" : "";
    // The summary budget, counted live as the server counts it (visual
    // evidence has its own budget); execute refuses an over-budget handoff
    // unless the box says to send it anyway.
    const budget = this.preview?.summaryCharBudget ?? 0;
    const n = summaryChars(this.textArea.value);
    const over = budget > 0 && n > budget;
    this.count.textContent = budget > 0 ? `${n} / ${budget} characters${over ? " — over the summary budget" : ""}` : `${n} characters`;
    this.count.className = over ? "bad" : "ok";
    this.editor.dataset.overBudget = String(over);
    this.overBudgetLabel.hidden = !over;
  }

  async execute(): Promise<void> {
    if (!this.preview) return;
    const res = await this.app.guard(
      this.app.client.request("migration/execute", {
        previewId: this.preview.previewId,
        summary: this.textArea.value,
        ...(this.cont.checked ? { continue: true } : {}),
        ...(this.overBudget.checked && !this.overBudgetLabel.hidden ? { allowOverBudget: true } : {}),
      }),
    );
    if (!res) return;
    this.app.say(`Migrated to ${res.targetSessionId}${res.warnings.length ? ` (${res.warnings.join("; ")})` : ""}.`);
    await this.app.refresh();
    await this.app.open(res.targetSessionId);
  }
}
