// The doctor page: one row per adapter (installed or not, its version and
// program, whether it has what Bridge needs), with its capabilities and
// the reason for each one missing on demand.

import type { AdapterReport, DoctorResult } from "../../typescript/src/browser.js";
import { clear, h } from "./dom.js";
import { harnessName } from "./entries.js";

export function renderDoctor(region: HTMLElement, rep: DoctorResult): void {
  clear(region);
  region.appendChild(h("h2", {}, "Doctor"));
  region.appendChild(h("p", {}, `Data directory ${rep.dataDir}, schema version ${rep.schemaVersion}.`));
  const body = h("tbody");
  for (const a of rep.adapters) body.append(...rows(a));
  region.appendChild(
    h(
      "table",
      { id: "doctor-table", "aria-label": "Adapters" },
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Harness"), h("th", { scope: "col" }, "State"), h("th", { scope: "col" }, "Version"), h("th", { scope: "col" }, "Capabilities"))),
      body,
    ),
  );
}

/** rows are an adapter's row and its details row (hidden until asked for). */
function rows(a: AdapterReport): HTMLElement[] {
  const state = !a.installed ? "not installed" : a.ok ? "ready" : `lacks ${a.missing.join(", ")}`;
  const have = a.capabilities.filter((c) => c.available).length;
  const details = h("tr", { class: "details", hidden: true }, h("td", { colspan: 4 }, capabilities(a)));
  const id = `doctor-${a.harness.replace(/[^a-z0-9-]/gi, "")}`;
  details.id = id;
  const toggle = h(
    "button",
    {
      type: "button",
      class: "toggle",
      "aria-expanded": "false",
      "aria-controls": id,
      "aria-label": `Details of ${harnessName(a.harness)}`,
      onclick: () => {
        details.hidden = !details.hidden;
        toggle.setAttribute("aria-expanded", String(!details.hidden));
        toggle.textContent = details.hidden ? "Details" : "Hide";
      },
    },
    "Details",
  );
  const row = h(
    "tr",
    { "data-adapter": a.harness, class: !a.installed ? "absent" : a.ok ? "ready" : "lacking" },
    h("th", { scope: "row" }, harnessName(a.harness), h("small", {}, ` ${a.harness}`)),
    h("td", { class: "state" }, state, !a.installed && a.capabilities[0] ? h("small", { class: "why" }, ` — ${firstReason(a)}`) : null),
    h("td", {}, a.version ?? "—", a.binary ? h("small", { class: "binary" }, ` ${a.binary}`) : null),
    h("td", {}, `${have} of ${a.capabilities.length} `, toggle),
  );
  return [row, details];
}

/** firstReason is why a missing adapter's first missing capability is missing (the same for all of them). */
function firstReason(a: AdapterReport): string {
  const c = a.capabilities.find((x) => !x.available);
  return c?.detail || c?.reason || "";
}

/** capabilities lists an adapter's capabilities, each missing one with why. */
function capabilities(a: AdapterReport): HTMLElement {
  const list = h("ul", { class: "caps", "aria-label": `Capabilities of ${harnessName(a.harness)}` });
  for (const c of a.capabilities) {
    const why = c.available ? c.detail ?? "" : c.detail || c.reason;
    list.append(
      h(
        "li",
        { class: c.available ? "yes" : c.need === "required" ? "no required" : "no" },
        h("span", { "aria-hidden": "true" }, c.available ? "✓ " : "✗ "),
        h("span", { class: "sr-only" }, c.available ? "available: " : "missing: "),
        h("code", {}, c.name),
        c.need === "required" && !c.available ? h("strong", {}, " (required)") : null,
        c.need === "not_applicable" ? h("span", { class: "need" }, " (not applicable)") : null,
        why ? h("span", { class: "why" }, ` — ${why}`) : null,
      ),
    );
  }
  return list;
}
