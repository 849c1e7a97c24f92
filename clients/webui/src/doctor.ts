// The doctor page: the capability matrix, one column per adapter, with the
// reason for each capability that is missing.

import type { DoctorResult } from "../../typescript/src/browser.js";
import { clear, h } from "./dom.js";

export function renderDoctor(region: HTMLElement, rep: DoctorResult): void {
  clear(region);
  const caps: string[] = [];
  for (const a of rep.adapters) for (const c of a.capabilities) if (!caps.includes(c.name)) caps.push(c.name);
  const head = h("tr", {}, h("th", { scope: "col" }, "Capability"));
  for (const a of rep.adapters) {
    head.appendChild(
      h(
        "th",
        { scope: "col", "data-adapter": a.harness },
        a.harness,
        h("br"),
        h("small", {}, a.installed ? (a.ok ? "ok" : `lacks ${a.missing.join(", ")}`) : "not installed"),
        a.version ? h("small", {}, ` ${a.version}`) : null,
      ),
    );
  }
  const body = h("tbody");
  for (const name of caps) {
    const row = h("tr", {}, h("th", { scope: "row" }, name));
    for (const a of rep.adapters) {
      const c = a.capabilities.find((x) => x.name === name);
      if (!c) {
        row.appendChild(h("td", { class: "na" }, "—"));
        continue;
      }
      const why = c.available ? c.detail ?? "" : c.detail || c.reason;
      row.appendChild(
        h(
          "td",
          { class: c.available ? "yes" : c.need === "required" ? "no required" : "no", title: c.reason },
          c.available ? "✓" : "✗",
          why ? h("span", { class: "why" }, ` ${why}`) : null,
          c.need === "not_applicable" ? h("span", { class: "need" }, " (not applicable)") : null,
        ),
      );
    }
    body.appendChild(row);
  }
  region.appendChild(h("h2", {}, "Doctor"));
  region.appendChild(h("p", {}, `Data directory ${rep.dataDir}, schema version ${rep.schemaVersion}.`));
  region.appendChild(h("table", { id: "doctor-matrix", "aria-label": "Capability matrix" }, h("thead", {}, head), body));
}
