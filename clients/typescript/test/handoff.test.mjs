// The TypeScript handoff parser against the cases Bridge's Go parser is
// held to (handoff-cases.json; core/handoff TestSharedCases).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { parseHandoff, handoffHeadings, summaryChars } from "../dist/esm/index.js";

const cases = JSON.parse(readFileSync(new URL("./handoff-cases.json", import.meta.url), "utf8"));

for (const c of cases) {
  test(`handoff case: ${c.name}`, () => {
    const h = parseHandoff(c.md);
    assert.deepEqual(h.problems, c.problems);
    assert.equal(summaryChars(c.md), c.summaryChars, "summaryChars");
    if (c.problems.length === 0) {
      assert.equal(h.lang, c.lang);
      assert.equal(Object.keys(h.sections).length, 5);
    }
  });
}

test("headings in English and Chinese", () => {
  assert.deepEqual(handoffHeadings.en, ["Goal", "Current state", "Key decisions & conventions", "Key files", "Next step"]);
  assert.equal(handoffHeadings.zh.length, 5);
});
