// The WebUI in real Chromium (Debian's chromium, driven by playwright-core)
// against the real bridge binary. Run by `go test ./clients/webui`, which
// builds the binary and sets BRIDGE_BIN, CHROMIUM and, for the Claude Code
// flow, CLAUDE_DATA_DIR and CLAUDE_CWD (a data directory whose config.json
// points claude-code at a fake model server) and CLAUDE_REPLY.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { chromium } from "playwright-core";

const bin = process.env.BRIDGE_BIN;
const chromiumPath = process.env.CHROMIUM;
if (!bin || !chromiumPath) throw new Error("BRIDGE_BIN and CHROMIUM must be set (go test ./clients/webui sets them)");
const tmp = () => mkdtempSync(path.join(tmpdir(), "bridge-webui-test-"));

/**
 * startWeb runs bridge web and resolves to its printed URL, to
 * stderrLine(re), which resolves when bridge web's stderr (passed on to
 * ours) has a line matching re, and to stderrText(), all of it so far.
 */
export function startWeb(dataDir, env = {}) {
  const child = spawn(bin, ["web", "--data-dir", dataDir, "--listen", "127.0.0.1:0"], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, ...env },
  });
  after(() => child.kill("SIGTERM"));
  let errText = "";
  const waiting = [];
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (d) => {
    process.stderr.write(d);
    errText += d;
    for (const w of waiting.splice(0)) {
      if (w.re.test(errText)) w.resolve();
      else waiting.push(w);
    }
  });
  const stderrLine = (re) => new Promise((resolve) => (re.test(errText) ? resolve() : waiting.push({ re, resolve })));
  return new Promise((resolve, reject) => {
    let buf = "";
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (d) => {
      buf += d;
      if (!buf.includes("\n")) return;
      const m = /^Bridge WebUI: ((http:\/\/127\.0\.0\.1:\d+)\/#token=\S+)$/.exec(buf.split("\n")[0]);
      if (m) resolve({ url: m[1], base: m[2], stderrLine, stderrText: () => errText });
      else reject(new Error(`unexpected first line ${JSON.stringify(buf.split("\n")[0])}`));
    });
    child.on("exit", (code) => reject(new Error(`bridge web exited ${code}`)));
  });
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/**
 * checkAccessibility runs axe-core in the page and fails on any serious or
 * critical violation. (Evaluated over the DevTools protocol, which the
 * page's Content-Security-Policy does not govern.)
 */
async function checkAccessibility(page, where) {
  await page.evaluate(`${axeSource}\n;0`);
  const violations = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ["violations"] });
    return r.violations
      .filter((v) => v.impact === "serious" || v.impact === "critical")
      .map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(" ")).slice(0, 3).join(", ")})`);
  });
  assert.deepEqual(violations, [], `axe-core in ${where}`);
}

/** noHorizontalScroll asserts that nothing in the page scrolls sideways. */
async function noHorizontalScroll(page, where) {
  const wide = await page.evaluate(() => {
    const out = [];
    const root = document.documentElement;
    if (root.scrollWidth > root.clientWidth) out.push(`the page (${root.scrollWidth} > ${root.clientWidth})`);
    for (const el of document.querySelectorAll("main, #sessions, .scroller, #doctor, #search-panel")) {
      const st = getComputedStyle(el);
      if (el.offsetParent !== null && st.overflowX !== "hidden" && el.scrollWidth > el.clientWidth + 1) out.push(`${el.id || el.className} (${el.scrollWidth} > ${el.clientWidth})`);
    }
    return out;
  });
  assert.deepEqual(wide, [], `horizontal scroll at ${where}`);
}

/**
 * shoot writes docs/img/NAME-1280.png and NAME-390.png (SCREENSHOTS set:
 * node docs/screenshots.mjs); opts.open names a details element to open first.
 */
async function shoot(page, name, opts = {}) {
  const dir = path.join(path.dirname(new URL(import.meta.url).pathname), "..", "..", "..", "docs", "img");
  if (opts.open) await page.locator(opts.open).first().evaluate((d) => (d.open = true));
  for (const [width, height] of [
    [1280, 800],
    [390, 844],
  ]) {
    await page.setViewportSize({ width, height });
    await page.waitForTimeout(150);
    await page.screenshot({ path: path.join(dir, `${name}-${width}.png`) });
  }
  await page.setViewportSize({ width: 1280, height: 800 });
}

let browser;
before(async () => {
  browser = await chromium.launch({ executablePath: chromiumPath, args: ["--no-sandbox"] });
});
after(async () => {
  await browser?.close();
});

/**
 * openPage opens url and collects page errors and dialogs (any would mean
 * script ran); opts.context is the browser context to open it in, and
 * opts.route(page), when given, runs before the page loads (to route its
 * WebSocket).
 */
async function openPage(url, opts = {}) {
  const page = await (opts.context ?? browser).newPage();
  await opts.route?.(page);
  // Waits are for events, not deadlines: on a loaded 2-core machine a step
  // can take longer than Playwright's default 30 s without being wrong.
  page.setDefaultTimeout(120_000);
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(`console: ${m.text()}`);
  });
  page.on("dialog", async (d) => {
    errors.push(`dialog: ${d.message()}`);
    await d.dismiss();
  });
  await page.goto(url);
  return { page, errors };
}

async function createFake(page, title) {
  await page.getByRole("form", { name: "New session" }).waitFor();
  await page.locator("#new-harness").selectOption("fake");
  await page.locator("#new-cwd").fill(tmp());
  await page.locator("#new-title").fill(title);
  await page.getByRole("button", { name: "Create" }).click();
  await page.waitForFunction((t) => document.getElementById("session-title")?.textContent === t, title);
}

async function promptText(page, text) {
  await page.getByRole("textbox", { name: "Prompt text" }).fill(text);
  await page.getByRole("button", { name: "Send", exact: true }).click();
}

test("a fake session: create, prompt, entries stream; landmarks are named", async () => {
  const web = await startWeb(tmp());
  const { page, errors } = await openPage(web.url);
  for (const [role, name] of [
    ["navigation", "Sessions"],
    ["main", "Session"],
    ["form", "New session"],
    ["navigation", "Views"],
  ]) {
    assert.equal(await page.getByRole(role, { name, exact: true }).count(), 1, `landmark ${role} "${name}"`);
  }
  await createFake(page, "stream me");
  assert.equal(await page.getByRole("form", { name: "Prompt" }).count(), 1);
  assert.equal(await page.getByRole("log", { name: "History" }).count(), 1);
  await promptText(page, "say first words\nstream 5\ntool ls /tmp");
  await page.locator("#history .kind-tool-completed").waitFor();
  assert.ok((await page.locator("#history .kind-assistant-message").count()) >= 6, "streamed assistant entries");
  assert.match(await page.locator("#history").innerText(), /first words/);
  // The list shows harness, title, cwd, status and last activity.
  const item = page.locator("#session-list li").first();
  assert.match(await item.innerText(), /stream me[\s\S]*Fake agent[\s\S]*bridge-webui-test-/);
  // The status is the service's: its harness process runs (live).
  await page.waitForFunction(() => document.querySelector("#session-list li .state")?.textContent === "live");
  // Rename and archive.
  await page.getByRole("button", { name: "Rename stream me" }).click();
  await page.getByRole("textbox", { name: "New title" }).fill("renamed one");
  await page.getByRole("button", { name: "Save" }).click();
  await page.getByRole("button", { name: "Open renamed one" }).waitFor();
  await page.getByRole("button", { name: "Archive renamed one" }).click();
  await page.locator("#session-list li.empty").waitFor();
  assert.deepEqual(errors, []);
});

test("history pages backwards as the user scrolls; pasted images go with the prompt; cancel ends a turn", async () => {
  const web = await startWeb(tmp());
  const { page, errors } = await openPage(web.url);
  await createFake(page, "long one");
  await promptText(page, "stream 150");
  await page.getByRole("status", { name: "Session status" }).filter({ hasText: /Turn ended/ }).waitFor();
  // Opened afresh, the session shows its newest page only…
  await page.getByRole("button", { name: "Open long one" }).click();
  await page.locator("#history li.entry").first().waitFor();
  const first = Number(await page.locator("#history").getAttribute("data-loaded"));
  assert.ok(first > 0 && first < 100, `newest page has ${first} entries`);
  assert.match(await page.locator("#history li.entry").last().innerText(), /149|stream/);
  // …and scrolling up brings the older pages, shown above.
  const oldestShown = () => page.locator("#history > li").evaluateAll((els) => Math.min(...els.map((e) => Number(e.dataset.seq))));
  const oldestFirst = await oldestShown();
  for (let i = 0; i < 10 && (await oldestShown()) >= oldestFirst; i++) {
    await page.locator(".scroller").evaluate((el) => (el.scrollTop = 0));
    await page.waitForTimeout(200);
  }
  assert.ok(Number(await page.locator("#history").getAttribute("data-loaded")) > first, "an older page was loaded");
  assert.ok((await oldestShown()) < oldestFirst, "older entries are shown above the newest page");

  // A pasted image is shown, then sent with the prompt.
  await page.getByRole("textbox", { name: "Prompt text" }).evaluate(async (ta) => {
    const png = Uint8Array.from(
      atob("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="),
      (c) => c.charCodeAt(0),
    );
    const dt = new DataTransfer();
    dt.items.add(new File([png], "dot.png", { type: "image/png" }));
    ta.dispatchEvent(new ClipboardEvent("paste", { clipboardData: dt, bubbles: true, cancelable: true }));
  });
  await page.locator(".thumbs img").waitFor();
  await promptText(page, "what is in this picture?");
  await page.locator("#history .kind-user-message", { hasText: "1 image(s)" }).waitFor();
  assert.equal(await page.locator(".thumbs img").count(), 0, "the thumbnail went with the prompt");

  // Cancel ends a running turn.
  await promptText(page, "hang");
  await page.getByRole("status", { name: "Session status" }).filter({ hasText: /Running/ }).waitFor();
  await page.getByRole("button", { name: "Cancel" }).click();
  await page.getByRole("status", { name: "Session status" }).filter({ hasText: /Turn ended: cancelled|Turn failed/ }).waitFor();
  assert.match(await page.getByRole("status", { name: "Session status" }).innerText(), /cancelled/);
  assert.deepEqual(errors, []);
});

/**
 * scrollHistory scrolls the history by dy px a frame (a wheel, roughly)
 * until the view is at the first row of the session (every page loaded:
 * data-complete) and its text matches text (dy < 0), or at the last row,
 * whose text matches text (dy > 0), for at most 3,000 frames, and returns,
 * frame by frame, the seq of the row at the top of the view, the rows in the
 * page, whether they were in order, and (for a failure's message) where the
 * view and the list's window were. With opened, it first waits for a
 * history not marked data-before (the one shown when the caller marked it)
 * whose last row matches opened (the session opened afresh after this
 * call), and scrolls from the frame it shows: while the list still builds
 * the rows of its first frames.
 */
function scrollHistory(page, dy, text, opened) {
  return page.evaluate(
    ([dy, text, opened]) =>
      new Promise((resolve) => {
        let scroller, log;
        const re = new RegExp(text);
        const done =
          dy < 0
            ? () => log.dataset.first === "0" && log.dataset.complete === "true" && scroller.scrollTop === 0 && re.test(log.firstElementChild?.textContent ?? "")
            : () => scroller.scrollTop + scroller.clientHeight >= scroller.scrollHeight - 1 && re.test(log.lastElementChild?.textContent ?? "");
        const frames = [];
        const step = () => {
          const top = scroller.getBoundingClientRect().top;
          const rows = Array.from(log.children);
          const seqs = rows.map((r) => Number(r.dataset.seq));
          const atTop = rows.find((r) => r.getBoundingClientRect().bottom > top + 1);
          const d = log.dataset;
          frames.push({
            top: atTop ? Number(atTop.dataset.seq) : -1,
            shown: rows.length,
            ordered: seqs.every((x, i) => i === 0 || x > seqs[i - 1]),
            at: `scrollTop ${scroller.scrollTop} of ${scroller.scrollHeight}, rows ${d.first}-${d.end} of ${d.rows} in the page, complete ${d.complete}`,
          });
          if (done() || frames.length > 3000) return resolve(frames);
          scroller.scrollTop += dy;
          requestAnimationFrame(step);
        };
        const start = () => {
          log = document.getElementById("history");
          scroller = log?.closest(".scroller");
          if (opened && (!log || log.dataset.before !== undefined || !new RegExp(opened).test(log.lastElementChild?.textContent ?? ""))) return requestAnimationFrame(start);
          step();
        };
        requestAnimationFrame(start);
      }),
    [dy, text, opened],
  );
}

test("a long history keeps only the rows near the view in the page; scrolling back keeps the view steady, and the rows work as before", async () => {
  const web = await startWeb(tmp());
  const { page, errors } = await openPage(web.url);
  await createFake(page, "very long");
  await promptText(page, "stream 600");
  await page.getByRole("status", { name: "Session status" }).filter({ hasText: /Turn ended/ }).waitFor();
  // Live: 600 entries streamed, the newest in view, a screenful in the page.
  await page.locator("#history .kind-assistant-message", { hasText: "stream 600/600" }).waitFor();
  assert.ok(Number(await page.locator("#history").getAttribute("data-loaded")) >= 601);
  const live = await page.locator("#history > li").count();
  assert.ok(live < 100, `${live} rows in the page after streaming 600`);

  // Opened afresh: the newest page; scrolled back a wheel's step a frame to
  // the first entry, the row at the top of the view only ever gets older
  // (an older page going in above does not move the view), the page never
  // holds more than a few screenfuls of rows, always in order.
  // The scrolling starts in the frame the newest page shows, while the
  // list still builds rows for the frames after it (a render is pending):
  // it once put the view back at the end every frame.
  await page.locator("#history").evaluate((el) => (el.dataset.before = ""));
  const scrolled = scrollHistory(page, -300, "stream 600", "stream 600/600");
  await page.getByRole("button", { name: "Open very long" }).click();
  const up = await scrolled;
  assert.ok(up.length <= 3000, `scrolling back reached the first entry (after 3,000 frames: ${up.at(-1).at})`);
  for (let i = 1; i < up.length; i++) assert.ok(up[i].top <= up[i - 1].top, `frame ${i}: the view moved forward from seq ${up[i - 1].top} to ${up[i].top}`);
  assert.ok(up.every((f) => f.ordered), "rows in order");
  const most = Math.max(...up.map((f) => f.shown));
  assert.ok(most < 100, `at most ${most} rows in the page`);
  assert.ok(Number(await page.locator("#history").getAttribute("data-loaded")) >= 601, "every entry loaded");
  // The first row works as any: its actions show on focus, axe is content.
  const user = page.locator("#history .kind-user-message", { hasText: "stream 600" });
  const fork = user.getByRole("button", { name: /^Fork from here \(entry \d+\)$/ });
  await fork.focus();
  assert.equal(await fork.evaluate((b) => getComputedStyle(b.parentElement).opacity), "1", "shown on focus");
  await checkAccessibility(page, "a long history scrolled back");

  // And down again to the newest, the rows built before shown again.
  const down = await scrollHistory(page, 300, "stream 600/600");
  assert.ok(down.length <= 3000, `scrolling down reached the newest entry (after 3,000 frames: ${down.at(-1).at})`);
  for (let i = 1; i < down.length; i++) assert.ok(down[i].top >= down[i - 1].top, `frame ${i}: the view moved back from seq ${down[i - 1].top} to ${down[i].top}`);
  assert.ok(Math.max(...down.map((f) => f.shown)) < 100);
  // A prompt now appends in view.
  await promptText(page, "say after the long one");
  await page.locator("#history .kind-assistant-message", { hasText: "after the long one" }).waitFor();
  assert.deepEqual(errors, []);
});

test("Context compacted and Checkpoint saved are two different cards, each from its notification", async () => {
  const web = await startWeb(tmp());
  const { page, errors } = await openPage(web.url);
  await createFake(page, "cards");
  await promptText(page, 'say working on it\ncompact manual 9000 900\nnext json {"summary": "the parser is half done"}');
  const compacted = page.locator("#history .card-compacted");
  await compacted.waitFor();
  assert.match(await compacted.innerText(), /Context compacted/);
  assert.equal(await page.locator("#history .card-checkpoint").count(), 0, "no checkpoint card from a compaction");
  await page.getByRole("button", { name: "Checkpoint now" }).click();
  const saved = page.locator("#history .card-checkpoint");
  await saved.waitFor();
  assert.match(await saved.innerText(), /Checkpoint saved/);
  assert.doesNotMatch(await saved.innerText(), /Context compacted/);
  assert.equal(await page.locator("#history .card-compacted").count(), 1, "the checkpoint added no compaction card");
  const styles = await page.evaluate(() =>
    [".card-compacted", ".card-checkpoint"].map((s) => {
      const st = getComputedStyle(document.querySelector(s));
      return `${st.backgroundColor} ${st.borderStyle}`;
    }),
  );
  assert.notEqual(styles[0], styles[1], "the two cards look different");
  // /compact with a focus the fake ignores says so.
  await page.getByRole("textbox", { name: "Compaction focus" }).fill("keep the parser");
  await page.getByRole("button", { name: "Compact" }).click();
  await page.getByRole("status", { name: "Session status" }).filter({ hasText: /focus not applied/ }).waitFor();
  // Resume names its mode.
  await page.getByRole("button", { name: "Resume" }).click();
  const banner = page.getByRole("status", { name: "Resume" });
  await banner.waitFor();
  assert.match(await banner.innerText(), /hot|native|checkpoint_restored|fresh/);
  assert.deepEqual(errors, []);
});

test("migration: preview, edit a number in the handoff editor, execute; the target's first prompt carries the edit", async () => {
  const web = await startWeb(tmp());
  const { page, errors } = await openPage(web.url);
  await createFake(page, "source");
  await promptText(
    page,
    "say I edit src/commit.go; the budget is 4096 tokens\n" +
      "worker say ## Goal\nworker say Keep the budget at 4096 tokens.\n" +
      "worker say ## Current state\nworker say The tests pass.\n" +
      "worker say ## Key decisions & conventions\nworker say One transaction per write.\n" +
      "worker say ## Key files\nworker say - src/commit.go\n" +
      "worker say ## Next step\nworker say Ship it.",
  );
  await page.getByRole("status", { name: "Session status" }).filter({ hasText: /Turn ended/ }).waitFor();
  await page.getByRole("button", { name: "Migrate…" }).click();
  await page.getByRole("form", { name: "Migration target" }).waitFor();
  await page.locator("#mig-harness").selectOption("fake");
  await page.locator("#mig-preset").selectOption("readonly");
  await page.getByRole("button", { name: "Preview" }).click();
  const editor = page.getByRole("region", { name: "Handoff" });
  await editor.waitFor();
  const text = page.getByRole("textbox", { name: "Handoff text" });
  const original = await text.inputValue();
  assert.match(original, /4096/);
  assert.equal(await page.locator("#handoff-checks li.ok").count(), 5);
  // The summary budget is counted live, as the server counts it…
  await page.locator("#handoff-count", { hasText: / \/ 2400 characters$/ }).waitFor();
  await text.fill(original.replace("The tests pass.", "The tests pass. " + "x".repeat(2400)));
  await page.locator("#handoff-count", { hasText: "over the summary budget" }).waitFor();
  assert.ok(await page.getByRole("checkbox", { name: "send it over its budget anyway" }).isVisible());
  // A broken heading is caught live by the client package's parser…
  await text.fill(original.replace("## Key files", "## Files"));
  await page.locator('#handoff-checks li.bad[data-part="keyFiles"]').waitFor();
  // …and the rendered view shows Markdown.
  await page.getByRole("tab", { name: "Rendered" }).click();
  assert.ok((await page.locator("#handoff-rendered h3").count()) >= 4);
  await page.getByRole("tab", { name: "Text" }).click();
  await text.fill(original.replace("4096", "8192"));
  assert.equal(await page.locator("#handoff-checks li.ok").count(), 5);
  await page.getByRole("button", { name: "Execute migration" }).click();
  // The target opens; its first prompt (the kickoff) carries the edit.
  await page.locator("#history .kind-user-message", { hasText: "8192" }).first().waitFor();
  assert.doesNotMatch(await page.locator("#history .kind-user-message").first().innerText(), /4096 tokens\./);
  assert.deepEqual(errors, []);
});

test("migration on a fresh install: one plain prompt, the form's defaults, the preview has five sections", async () => {
  const web = await startWeb(tmp());
  const { page, errors } = await openPage(web.url);
  await createFake(page, "plain");
  await promptText(page, "please tidy the parser");
  await page.getByRole("status", { name: "Session status" }).filter({ hasText: /Turn ended/ }).waitFor();
  await page.getByRole("button", { name: "Migrate…" }).click();
  await page.getByRole("form", { name: "Migration target" }).waitFor();
  await page.getByRole("button", { name: "Preview" }).click();
  await page.getByRole("region", { name: "Handoff" }).waitFor();
  assert.equal(await page.locator("#handoff-checks li.ok").count(), 5);
  assert.match(await page.getByRole("textbox", { name: "Handoff text" }).inputValue(), /## Goal\nplease tidy the parser/);
  assert.deepEqual(errors, []);
});

test("the doctor page lists every adapter in one row, with the reason for each missing capability on demand", async () => {
  const web = await startWeb(tmp());
  const { page, errors } = await openPage(web.url);
  await page.getByRole("button", { name: "Doctor" }).click();
  const region = page.getByRole("region", { name: "Doctor" });
  await region.waitFor();
  await page.locator("#doctor-table").waitFor();
  const adapters = await page.locator("#doctor-table tr[data-adapter]").evaluateAll((els) => els.map((e) => e.dataset.adapter));
  // Every adapter this bridge serves (rpchost only exists for a client that hosts sessions), once.
  for (const a of ["claude-code", "codex", "opencode", "acp", "dsh", "fake"]) {
    assert.equal(adapters.filter((x) => x === a).length, 1, `doctor lists ${a} once (has ${adapters})`);
  }
  // Details are on demand: hidden, then shown, each missing capability with why.
  const fake = page.locator('#doctor-table tr[data-adapter="fake"]');
  assert.match(await fake.innerText(), /ready/);
  const missingSomewhere = page.locator("#doctor-table .caps li.no");
  assert.equal(await missingSomewhere.first().isVisible(), false, "details start hidden");
  for (const button of await page.getByRole("button", { name: /^Details of / }).all()) await button.click();
  assert.ok((await missingSomewhere.count()) > 0, "some capability is missing somewhere");
  for (const cell of await missingSomewhere.all()) {
    assert.ok((await cell.locator(".why").innerText()).trim().length > 0, "a missing capability says why");
  }
  // The table fits the page: nothing cut off at 1280 px.
  const fits = await page.evaluate(() => {
    const t = document.getElementById("doctor-table");
    return t.getBoundingClientRect().right <= document.documentElement.clientWidth;
  });
  assert.ok(fits, "the doctor table fits the page width");
  assert.deepEqual(errors, []);
});

test("a page without the token cannot reach /rpc", async () => {
  const web = await startWeb(tmp());
  for (const url of [`${web.base}/`, `${web.base}/#token=wrong`]) {
    const { page } = await openPage(url);
    await page.waitForFunction(() => document.body.dataset.state === "unauthorized");
    assert.match(await page.locator("#status").innerText(), /token/);
    assert.equal(await page.locator("#session-list li").count(), 0);
    // An explanation instead of live controls.
    const note = page.getByRole("region", { name: "No access" });
    assert.match(await note.innerText(), /bridge web[\s\S]*#token=/);
    assert.equal(await page.getByRole("button", { name: "Create" }).isVisible(), false, "no live form without the token");
    assert.equal(await page.locator("#search-query").isVisible(), false);
    const outcome = await page.evaluate(
      (u) =>
        new Promise((resolve) => {
          const ws = new WebSocket(u);
          ws.onopen = () => resolve("open");
          ws.onerror = () => resolve("refused");
        }),
      `ws${web.base.slice(4)}/rpc`,
    );
    assert.equal(outcome, "refused");
  }
});

/**
 * sentOnRpc opens url in a new page and collects the JSON-RPC messages the
 * page sends on /rpc (as Chromium sent them: DevTools' WebSocket frames);
 * init, when given, is an init script run before the page's own. With
 * hold, app.js is served only once /rpc has answered something (so that
 * the socket is open before the main script runs, as on a usual load).
 */
async function sentOnRpc(url, init, hold = false) {
  const context = await browser.newContext();
  after(() => context.close());
  if (init) await context.addInitScript(init);
  const page = await context.newPage();
  page.setDefaultTimeout(120_000);
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => m.type() === "error" && errors.push(`console: ${m.text()}`));
  const sent = [];
  let answered;
  const replied = new Promise((resolve) => (answered = resolve));
  page.on("websocket", (ws) => {
    ws.on("framesent", (f) => sent.push(JSON.parse(String(f.payload))));
    ws.on("framereceived", () => answered());
  });
  if (hold) await page.route((u) => u.pathname === "/app.js", async (route) => (await replied, route.continue()));
  await page.goto(url);
  await page.waitForFunction(() => document.body.dataset.state === "connected");
  return { page, errors, sent };
}

test("the page's first script sends initialize and the list's first page as the socket opens; the page shows their replies and sends neither again, and when the socket opens too late, the page initializes itself", async () => {
  const web = await startWeb(tmp());
  const first = await openPage(web.url);
  await first.page.waitForFunction(() => document.body.dataset.state === "connected");
  await first.page.evaluate((cwd) => window.bridgeApp.client.request("session/create", { harness: "fake", cwd, title: "listed" }), tmp());
  const early = await sentOnRpc(web.url, undefined, true);
  await early.page.getByRole("button", { name: "Open listed" }).waitFor();
  // index.html's script: initialize, initialized and session/list, before anything of the client's.
  assert.deepEqual(
    early.sent.slice(0, 3).map((m) => [m.id, m.method]),
    [
      ["boot:initialize", "initialize"],
      [undefined, "initialized"],
      ["boot:list", "session/list"],
    ],
  );
  const methods = early.sent.map((m) => m.method);
  assert.equal(methods.filter((m) => m === "initialize").length, 1, `sent: ${methods}`);
  assert.equal(methods.filter((m) => m === "initialized").length, 1, `sent: ${methods}`);
  assert.equal(methods.filter((m) => m === "session/list").length, 1, `sent: ${methods}`);
  // The page works on that connection: a session opens.
  await early.page.getByRole("button", { name: "Open listed" }).click();
  await early.page.waitForFunction(() => document.getElementById("session-title")?.textContent === "listed");
  assert.deepEqual(early.errors, []);

  // The socket opening after the main script took it (its onopen taken away
  // before it ran): the client sends initialize and the list itself, once.
  const late = await sentOnRpc(web.url, () => {
    Object.defineProperty(window, "bridgeBoot", {
      configurable: true,
      set(boot) {
        boot.ws.onopen = null;
        Object.defineProperty(window, "bridgeBoot", { configurable: true, writable: true, value: boot });
      },
    });
  });
  await late.page.getByRole("button", { name: "Open listed" }).waitFor();
  const lateMethods = late.sent.map((m) => m.method);
  assert.equal(lateMethods[0], "initialize", `sent: ${lateMethods}`);
  assert.equal(typeof late.sent[0].id, "number");
  assert.equal(lateMethods.filter((m) => m === "initialize").length, 1, `sent: ${lateMethods}`);
  assert.equal(lateMethods.filter((m) => m === "session/list").length, 1, `sent: ${lateMethods}`);
  // Both ways declare the same client (index.html's params are main.ts's).
  assert.deepEqual(early.sent[0].params, late.sent[0].params);
  await late.page.getByRole("button", { name: "Open listed" }).click();
  await late.page.waitForFunction(() => document.getElementById("session-title")?.textContent === "listed");
  assert.deepEqual(late.errors, []);
});

test("markup in a session's text runs no script", async () => {
  const web = await startWeb(tmp());
  const { page, errors } = await openPage(web.url);
  await page.evaluate(() => {
    window.__pwned = 0;
  });
  await createFake(page, '<img src=x onerror="window.__pwned=1">');
  const payloads = [
    '<img src=x onerror="window.__pwned=2;alert(2)">',
    "<script>window.__pwned=3</script>",
    "[click](javascript:window.__pwned=4)",
    '<svg onload="window.__pwned=5"></svg>',
  ];
  await promptText(page, payloads.map((p) => `say ${p}`).join("\n"));
  await page.getByRole("status", { name: "Session status" }).filter({ hasText: /Turn ended/ }).waitFor();
  await page.waitForTimeout(300); // let any injected image fail to load
  assert.equal(await page.evaluate(() => window.__pwned), 0);
  assert.equal(await page.locator("#history img, #history script, #history svg, #session-list img").count(), 0);
  assert.equal(await page.locator('#history a[href^="javascript"]').count(), 0);
  assert.match(await page.locator("#history").innerText(), /<img src=x onerror=/);
  assert.deepEqual(errors, []);
});

test("real Claude Code through the page: Markdown from the model, approvals answered in the page, an edit as a diff", async () => {
  const dataDir = process.env.CLAUDE_DATA_DIR;
  const cwd = process.env.CLAUDE_CWD;
  const reply = process.env.CLAUDE_REPLY;
  assert.ok(dataDir && cwd && reply, "CLAUDE_DATA_DIR, CLAUDE_CWD and CLAUDE_REPLY must be set (go test ./clients/webui sets them)");
  const web = await startWeb(dataDir);
  const { page, errors } = await openPage(web.url);
  await page.getByRole("form", { name: "New session" }).waitFor();
  await page.locator('#new-harness option[value="claude-code"]').waitFor({ state: "attached" });
  await page.locator("#new-harness").selectOption("claude-code");
  await page.locator("#new-cwd").fill(cwd);
  await page.locator("#new-title").fill("claude in the page");
  await page.getByRole("button", { name: "Create" }).click();
  await page.waitForFunction(() => document.getElementById("session-title")?.textContent === "claude in the page", null, { timeout: 120000 });
  await promptText(page, "Say hello to the page.");
  const answer = page.locator("#history .kind-assistant-message", { hasText: "Hello, page" });
  await answer.waitFor({ timeout: 180000 });
  assert.match(await page.locator("#history .kind-user-message").first().innerText(), /You[\s\S]*Say hello to the page/);
  assert.match(await answer.locator(".speaker").innerText(), /^Claude Code$/);
  // The model's Markdown: a code block (with Copy), snake_case and a link, as written.
  assert.equal(await answer.locator(".code-block pre code").innerText(), "def parse_header_line(raw_line):\n    return raw_line.split(\"_\")");
  assert.equal(await answer.getByRole("button", { name: "Copy code" }).count(), 1);
  assert.match(await answer.locator(".md").innerText(), /uses parse_header_line and my_var_name/);
  assert.equal(await answer.locator("a").getAttribute("href"), "https://example.com/docs_v2");
  assert.equal(await answer.locator("em").count(), 0);

  // Claude Code asks before running Bash: the page shows the question in
  // the session and flags the session in the list; "Allow once" runs it.
  const approval = page.getByRole("group", { name: /^Approval: / });
  await promptText(page, "run the allowed command");
  await approval.waitFor({ timeout: 180000 });
  assert.match(await approval.innerText(), /Claude Code asks to run[\s\S]*echo allowed/);
  await page.locator("#session-list li.waiting .waiting-badge").waitFor();
  assert.match(await page.title(), /Waiting for you/);
  await approval.getByRole("button", { name: "Allow once" }).click();
  await page.locator("#history .entry.kind-approval-resolved", { hasText: "Allowed once by you" }).waitFor({ timeout: 180000 });
  await page.locator("#history .entry.tool.kind-tool-completed", { hasText: "echo allowed" }).waitFor({ timeout: 180000 });
  await page.getByRole("status", { name: "Session status" }).filter({ hasText: /Turn ended/ }).waitFor({ timeout: 180000 });
  assert.equal(readFileSync(path.join(cwd, "allowed.txt"), "utf8").trim(), "allowed", "the allowed command ran");
  assert.equal(await page.locator("#session-list li.waiting").count(), 0, "nothing waits any more");
  assert.doesNotMatch(await page.title(), /Waiting/);

  // "Reject once": the command does not run.
  await promptText(page, "run the rejected command");
  await approval.waitFor({ timeout: 180000 });
  await approval.getByRole("button", { name: "Reject once" }).click();
  await page.locator("#history .entry.kind-approval-resolved", { hasText: "Rejected once by you" }).waitFor({ timeout: 180000 });
  await page.getByRole("status", { name: "Session status" }).filter({ hasText: /Turn ended/ }).waitFor({ timeout: 180000 });
  assert.equal(existsSync(path.join(cwd, "rejected.txt")), false, "the rejected command did not run");

  // An edit: asked with its diff, then shown as a tool card with the diff.
  await promptText(page, "edit the notes");
  await approval.waitFor({ timeout: 180000 });
  assert.match(await approval.locator("pre.diff").innerText(), /- budget: 4096\s+\+ budget: 8192/);
  if (process.env.SCREENSHOTS) await shoot(page, "approval");
  await approval.getByRole("button", { name: "Allow once" }).click();
  const edit = page.locator("#history .entry.tool.kind-tool-completed", { has: page.locator("pre.diff") });
  await edit.waitFor({ timeout: 180000 });
  await page.getByRole("status", { name: "Session status" }).filter({ hasText: /Turn ended/ }).waitFor({ timeout: 180000 });
  assert.match(readFileSync(path.join(cwd, "notes.txt"), "utf8"), /budget: 8192/);
  await edit.locator("summary").click();
  assert.match(await edit.locator("pre.diff").innerText(), /- budget: 4096\s+\+ budget: 8192/);
  assert.match(await edit.locator("summary").innerText(), /Edit[\s\S]*notes\.txt[\s\S]*done/);
  await checkAccessibility(page, "Claude Code session with tool cards");
  if (process.env.SCREENSHOTS) await shoot(page, "session-claude", { open: "#history .entry.tool.kind-tool-completed details" });
  assert.deepEqual(errors, []);
});

test("search finds a word across sessions, marks it, and opens the session; a bad query says why", async () => {
  const web = await startWeb(tmp());
  const { page, errors } = await openPage(web.url);
  await createFake(page, "first");
  await promptText(page, "say the zanzibar quokka <b>was</b> here");
  await page.locator("#history .kind-assistant-message", { hasText: "quokka" }).waitFor();
  await createFake(page, "second");
  await promptText(page, "say nothing to see");
  await page.locator("#history .kind-assistant-message", { hasText: "nothing" }).waitFor();
  await page.getByRole("searchbox", { name: "Search query" }).fill("zanzibar quokka");
  await page.getByRole("button", { name: "Search", exact: true }).click();
  const hit = page.locator("#search-results li").first();
  await hit.waitFor();
  assert.match(await hit.innerText(), /first[\s\S]*Fake agent/);
  const marks = await hit.locator("mark").allInnerTexts();
  assert.deepEqual(marks.join(" ").toLowerCase().split(/\s+/), ["zanzibar", "quokka"]);
  assert.equal(await hit.locator("b").count(), 0, "the snippet's markup stays text");
  await hit.getByRole("button").click();
  await page.waitForFunction(() => document.getElementById("session-title")?.textContent === "first");
  // Fork from the user's message: a new session (on the harness chosen
  // under New session, the fake) whose record starts with its origin.
  const user = page.locator("#history .kind-user-message", { hasText: "zanzibar" });
  await user.getByRole("button", { name: /^Fork from here \(entry \d+\)$/ }).click();
  await page.waitForFunction(() => document.getElementById("session-title")?.textContent === "fork of first");
  await page.locator("#history .kind-session-forked").waitFor();
  assert.match(await page.getByRole("status").first().innerText(), /Forked into fake session/);
  await page.getByRole("searchbox", { name: "Search query" }).fill('"unbalanced');
  await page.getByRole("button", { name: "Search", exact: true }).click();
  await page.locator("#search-panel .search-summary.error").waitFor();
  assert.match(await page.locator("#search-panel .search-summary.error").innerText(), /not valid/);
  assert.deepEqual(errors, []);
});

test("a search hit opens its session at the entry, highlighted, deep in a long history; scrolling down pages forwards to the newest, up to the first; live entries wait until the newest is reached", async () => {
  const web = await startWeb(process.env.LONG_DATA_DIR);
  const { page, errors } = await openPage(web.url);
  await page.getByRole("button", { name: "Open long record" }).waitFor();
  await page.getByRole("searchbox", { name: "Search query" }).fill("zanzibar");
  await page.getByRole("button", { name: "Search", exact: true }).click();
  const result = page.locator("#search-results li").first();
  await result.waitFor();
  await result.getByRole("button").click();
  // The hit: in view, highlighted, its neighbours around it; neither end loaded.
  const hit = page.locator('#history [data-hit="true"]');
  await hit.waitFor();
  assert.match(await hit.innerText(), /entry 1500 saw the zanzibar quokka/);
  const inView = () =>
    hit.evaluate((el) => {
      const r = el.getBoundingClientRect();
      const v = document.querySelector(".scroller").getBoundingClientRect();
      return r.top >= v.top - 1 && r.bottom <= v.bottom + 1;
    });
  assert.ok(await inView(), "the hit is in view");
  assert.equal(await hit.evaluate((el) => el.classList.contains("search-hit")), true);
  const log = page.locator("#history");
  assert.equal(await log.getAttribute("data-newest"), "false");
  assert.equal(await log.getAttribute("data-complete"), "false");
  await page.getByRole("button", { name: /go to the newest/ }).waitFor();
  assert.ok(Number(await log.getAttribute("data-loaded")) < 100, "only the page around the hit is loaded");
  await page.waitForTimeout(300);
  assert.ok(await inView(), "the hit stays in view once the page settles");

  // A live entry recorded meanwhile (another tab prompts the session) is
  // held: not shown in the middle of the history.
  const loadedBefore = await log.getAttribute("data-loaded");
  const other = await openPage(web.url);
  await other.page.getByRole("button", { name: "Open long record" }).click();
  await other.page.locator("#history li.entry").first().waitFor();
  await promptText(other.page, "say the live tail arrives");
  await other.page.locator("#history .kind-assistant-message", { hasText: "the live tail arrives" }).waitFor();
  await page.waitForTimeout(300);
  assert.equal(await log.getAttribute("data-loaded"), loadedBefore, "a live entry is not added in the middle of the history");

  // Down: forward pages go in below without moving the view back, to the newest entry (the live one, after entry 2999).
  const down = await scrollHistory(page, 300, "the live tail arrives");
  assert.ok(down.length <= 3000, "scrolling down reached the newest entry");
  for (let i = 1; i < down.length; i++) {
    assert.ok(down[i].top >= down[i - 1].top, `frame ${i}: the view moved back from seq ${down[i - 1].top} to ${down[i].top}`);
    // 300 px a frame passes a few rows (one entry each): a page going in below does not throw the view further.
    assert.ok(down[i].top - down[i - 1].top <= 30, `frame ${i}: the view jumped from seq ${down[i - 1].top} to ${down[i].top}`);
  }
  assert.ok(down.every((f) => f.ordered), "rows in order");
  assert.equal(await log.getAttribute("data-newest"), "true");
  assert.equal(await page.getByRole("button", { name: /go to the newest/ }).isHidden(), true);
  assert.equal(await page.locator("#history li", { hasText: "entry 2999 answers" }).count(), 1, "entry 2999 is shown once, before the live tail");
  // At the newest page, live entries append as before.
  await promptText(other.page, "say after reaching the end");
  await page.locator("#history .kind-assistant-message", { hasText: "after reaching the end" }).waitFor();

  // Up: older pages to the first entry.
  const up = await scrollHistory(page, -300, "entry 0 asks");
  assert.ok(up.length <= 3000, "scrolling up reached the first entry");
  for (let i = 1; i < up.length; i++) assert.ok(up[i].top <= up[i - 1].top, `frame ${i}: the view moved forward from seq ${up[i - 1].top} to ${up[i].top}`);
  assert.ok(up.every((f) => f.ordered), "rows in order");
  assert.equal(await log.getAttribute("data-complete"), "true");
  assert.ok(Math.max(...up.map((f) => f.shown), ...down.map((f) => f.shown)) < 100, "only the rows near the view are in the page");
  assert.deepEqual(errors, []);
  assert.deepEqual(other.errors, []);
});

/** historyView is what the History log shows: each row's class, seq and text. */
async function historyView(page) {
  return page.locator("#history > li").evaluateAll((els) => els.map((e) => [e.className, e.dataset.seq ?? "", e.innerText]));
}

test("after a reload, compaction and checkpoint entries are the same cards as live", async () => {
  const web = await startWeb(tmp());
  const { page, errors } = await openPage(web.url);
  await createFake(page, "cards again");
  await promptText(page, 'say before <b>bold</b>\ncompact auto 12000 3000\nnext json {"summary": "the <img src=x onerror=alert(1)> parser"}');
  await page.locator("#history .card-compacted").waitFor();
  await page.getByRole("status", { name: "Session status" }).filter({ hasText: /Turn ended/ }).waitFor();
  await page.getByRole("button", { name: "Checkpoint now" }).click();
  await page.locator("#history .card-checkpoint").waitFor();
  await page.getByRole("status", { name: "Session status" }).filter({ hasText: /Checkpoint .* written/ }).waitFor();
  const live = await historyView(page);
  assert.equal(live.filter(([c]) => c.includes("card-compacted")).length, 1);
  assert.equal(live.filter(([c]) => c.includes("card-checkpoint")).length, 1);

  await page.reload();
  await page.getByRole("button", { name: "Open cards again" }).click();
  await page.locator("#history .card-checkpoint").waitFor();
  const reloaded = await historyView(page);
  // The same rows, in the same places, with the same text: the cards come
  // from the record's entries as they came from the notifications.
  assert.deepEqual(reloaded, live);
  assert.equal(await page.locator("#history .kind-context-compacted, #history .kind-checkpoint").count(), 0, "no plain compaction or checkpoint entries");
  assert.match(await page.locator("#history .card-compacted").innerText(), /Context compacted[\s\S]*fake compacted its context \(auto\)\. 12000 → 3000 tokens/);
  assert.match(await page.locator("#history .card-checkpoint").innerText(), /Checkpoint saved[\s\S]*manual/);
  assert.doesNotMatch(await page.locator("#history .card-checkpoint").innerText(), /Context compacted/);
  // The two still look different.
  const styles = await page.evaluate(() =>
    [".card-compacted", ".card-checkpoint"].map((s) => {
      const st = getComputedStyle(document.querySelector(s));
      return `${st.backgroundColor} ${st.borderStyle}`;
    }),
  );
  assert.notEqual(styles[0], styles[1]);
  assert.equal(await page.locator("#history img, #history b").count(), 0, "text stayed text");
  assert.deepEqual(errors, []);
});

test("the session list pages past 200 sessions with a More control, keeping each session's status", async () => {
  const web = await startWeb(tmp());
  const { page, errors } = await openPage(web.url);
  await page.getByRole("form", { name: "New session" }).waitFor();
  await page.waitForFunction(() => document.body.dataset.state === "connected");
  const total = 230;
  const cwd = tmp();
  await page.evaluate(
    async ({ total, cwd }) => {
      for (let i = 0; i < total; i++) {
        await window.bridgeApp.client.request("session/create", { harness: "fake", cwd, title: `s${String(i).padStart(3, "0")}` });
      }
    },
    { total, cwd },
  );
  await page.reload();
  await page.waitForFunction(() => document.querySelectorAll("#session-list li[data-session]").length > 0);
  assert.equal(await page.locator("#session-list li[data-session]").count(), 200, "the first page");
  const more = page.getByRole("button", { name: "More sessions" });
  assert.ok(await more.isVisible(), "a More control while there are more");
  await page.getByRole("button", { name: "Open s000" }).waitFor({ state: "detached" });
  await more.click();
  await page.getByRole("button", { name: "Open s000" }).waitFor();
  const titles = await page.locator("#session-list li[data-session] .open").allInnerTexts();
  assert.equal(titles.length, total, "every session, once");
  assert.equal(new Set(titles).size, total);
  assert.ok(!(await more.isVisible()), "no More control on the last page");
  const states = await page.locator("#session-list li[data-session] .state").allInnerTexts();
  assert.equal(states.length, total);
  for (const st of states) assert.match(st, /^(live|idle|suspended|ended)/, "each row has its status");
  // A session from the second page opens, and renaming one keeps the older pages shown.
  await page.getByRole("button", { name: "Open s001" }).click();
  await page.waitForFunction(() => document.getElementById("session-title")?.textContent === "s001");
  await page.getByRole("button", { name: "Rename s002" }).click();
  await page.getByRole("textbox", { name: "New title" }).fill("s002 renamed");
  await page.getByRole("button", { name: "Save" }).click();
  await page.getByRole("button", { name: "Open s002 renamed" }).waitFor();
  assert.equal(await page.locator("#session-list li[data-session]").count(), total);
  assert.deepEqual(errors, []);
});

test("a session renamed or archived elsewhere changes in every tab's list without a reload", async () => {
  const web = await startWeb(tmp());
  const a = await openPage(web.url);
  const b = await openPage(web.url);
  await createFake(a.page, "kept");
  await createFake(a.page, "to rename");
  await createFake(a.page, "to archive");
  for (const { page } of [a, b]) await page.waitForFunction(() => document.body.dataset.state === "connected");
  await b.page.reload();
  await b.page.getByRole("button", { name: "Open to archive" }).waitFor();
  // Tab B renames one session and archives another through its own connection.
  await b.page.evaluate(async () => {
    const c = window.bridgeApp.client;
    const list = await c.request("session/list", {});
    const id = (t) => list.items.find((s) => s.title === t).sessionId;
    await c.request("session/rename", { sessionId: id("to rename"), title: "renamed elsewhere" });
    await c.request("session/archive", { sessionId: id("to archive") });
  });
  // Tab A never reloads: its list follows the notifications. The open
  // session (the last created, "to archive") leaves the list but stays open.
  await a.page.getByRole("button", { name: "Open renamed elsewhere" }).waitFor();
  await a.page.getByRole("button", { name: "Open to archive" }).waitFor({ state: "detached" });
  await a.page.getByRole("button", { name: "Open to rename" }).waitFor({ state: "detached" });
  const titles = await a.page.locator("#session-list li[data-session] .open").allInnerTexts();
  assert.deepEqual([...titles].sort(), ["kept", "renamed elsewhere"]);
  assert.deepEqual(a.errors, []);
  assert.deepEqual(b.errors, []);
});

test("a closed connection reconnects and reloads the list and the open session", async () => {
  const web = await startWeb(tmp());
  const { page, errors } = await openPage(web.url);
  await createFake(page, "survivor");
  await promptText(page, "say before the drop");
  await page.locator("#history .kind-assistant-message", { hasText: "before the drop" }).waitFor();
  // The server ends this page's connection (shutdown and exit close only
  // this one; bridge web does the same to a tab that falls behind).
  await page.evaluate(async () => {
    const c = window.bridgeApp.client;
    await c.request("shutdown");
    await c.connection.sendNotification("exit");
  });
  await page.waitForFunction(() => document.body.dataset.reconnects === "1");
  assert.match(await page.locator("#status").innerText(), /Reconnected/);
  assert.equal(await page.evaluate(() => document.body.dataset.state), "connected");
  await page.getByRole("button", { name: "Open survivor" }).waitFor();
  await page.locator("#history .kind-assistant-message", { hasText: "before the drop" }).waitFor();
  // The new connection works: a prompt streams.
  await promptText(page, "say after the drop");
  await page.locator("#history .kind-assistant-message", { hasText: "after the drop" }).waitFor();
  assert.deepEqual(errors, []);
});

/**
 * lateHistoryAnswers routes the page's WebSockets through the test, every
 * message passed on in order, except one: once armed, the answer to the
 * page's next session/history request for a first page (the newest, or
 * around an entry: no beforeSeq, no afterSeq) is held back until `after`
 * session/update notifications have gone past it to the page. That is what
 * the page sees when Bridge reads a page, records and announces entries,
 * then writes the answer (nothing orders an answer after the
 * notifications of entries recorded after its read); here the window is
 * made wide instead of left to chance. arm(after) resolves once an answer
 * is held (read by Bridge: later entries are not in it); passed() is how
 * many notifications went past it. failOlder(n, message) answers the
 * page's next n requests for an older page (beforeSeq) with an internal
 * error saying message, in Bridge's place; failed() counts them.
 * failFirst(n, message) does the same to the next n requests for a first
 * page (no beforeSeq, no afterSeq); failedFirst() counts those.
 * failNewer(n, message) to the next n requests for a forward page
 * (afterSeq); failedNewer() counts those.
 */
async function routeRpc(page) {
  let armed = 0;
  let passed = 0;
  let failing = 0;
  let failMessage = "";
  let failed = 0;
  let failingFirst = 0;
  let failedFirst = 0;
  let failingNewer = 0;
  let failedNewer = 0;
  let onHeld = () => {};
  await page.routeWebSocket(/\/rpc/, (ws) => {
    const server = ws.connectToServer();
    let want;
    let held;
    ws.onMessage((m) => {
      if (failing > 0 && typeof m === "string" && m.includes('"beforeSeq"')) {
        const msg = JSON.parse(m);
        if (msg.method === "session/history" && msg.params?.beforeSeq !== undefined) {
          failing--;
          failed++;
          ws.send(JSON.stringify({ jsonrpc: "2.0", id: msg.id, error: { code: -32603, message: failMessage, data: { code: "internal" } } }));
          return;
        }
      }
      if (failingNewer > 0 && typeof m === "string" && m.includes('"afterSeq"')) {
        const msg = JSON.parse(m);
        if (msg.method === "session/history" && msg.params?.afterSeq !== undefined) {
          failingNewer--;
          failedNewer++;
          ws.send(JSON.stringify({ jsonrpc: "2.0", id: msg.id, error: { code: -32603, message: failMessage, data: { code: "internal" } } }));
          return;
        }
      }
      if (failingFirst > 0 && typeof m === "string" && m.includes('"session/history"')) {
        const msg = JSON.parse(m);
        const p = msg.params ?? {};
        if (msg.method === "session/history" && p.beforeSeq === undefined && p.afterSeq === undefined) {
          failingFirst--;
          failedFirst++;
          ws.send(JSON.stringify({ jsonrpc: "2.0", id: msg.id, error: { code: -32603, message: failMessage, data: { code: "internal" } } }));
          return;
        }
      }
      if (armed && want === undefined && typeof m === "string" && m.includes('"session/history"')) {
        const msg = JSON.parse(m);
        const p = msg.params ?? {};
        if (msg.method === "session/history" && p.beforeSeq === undefined && p.afterSeq === undefined) want = msg.id;
      }
      server.send(m);
    });
    server.onMessage((m) => {
      if (want !== undefined && typeof m === "string") {
        const msg = JSON.parse(m);
        if (msg.method === undefined && msg.id === want) {
          held = m;
          want = undefined;
          passed = 0;
          onHeld();
          return;
        }
      }
      ws.send(m);
      if (held !== undefined && typeof m === "string" && m.includes('"session/update"') && ++passed >= armed) {
        ws.send(held);
        held = undefined;
        armed = 0;
      }
    });
    ws.onClose((code, reason) => server.close({ code, reason }));
    server.onClose((code, reason) => ws.close({ code, reason }));
  });
  return {
    arm: (after) => {
      armed = after;
      return new Promise((resolve) => (onHeld = resolve));
    },
    passed: () => passed,
    failOlder: (n, message) => {
      failing = n;
      failMessage = message;
    },
    failed: () => failed,
    failFirst: (n, message) => {
      failingFirst = n;
      failMessage = message;
    },
    failedFirst: () => failedFirst,
    failNewer: (n, message) => {
      failingNewer = n;
      failMessage = message;
    },
    failedNewer: () => failedNewer,
  };
}

/**
 * assertWholeHistory scrolls the open session's history up to its first
 * row and checks that every entry recorded is shown once, in order, with
 * the entry lastSeq as the newest row and a first row matching first.
 */
async function assertWholeHistory(page, lastSeq, first) {
  const up = await rowsScrolledUp(page);
  assert.ok(up.frames <= 3000, "scrolling up reached the first entry");
  assert.equal(up.disorder, "", "rows in order");
  assert.deepEqual(gapsIn(up.seqs), [], "every entry recorded is shown, once");
  assert.equal(up.seqs.at(-1), lastSeq, "the last entry is the newest row");
  assert.match(await page.locator("#history > li").first().innerText(), first, "the first row is the first prompt");
  assert.equal(up.rows, up.seqs.length, "one row per entry");
  assert.equal(up.loaded, up.seqs.length, "each entry counted once");
}

/**
 * rowsScrolledUp scrolls the history up 300 px a frame from where it is to
 * its first entry (older pages load on the way) and resolves to the seqs
 * of every row that was in the page, sorted, and the first pair of rows
 * found out of order in a frame (the window moves by less than its size,
 * so every two neighbouring rows share a frame), with the list's
 * data-loaded and data-rows at the end.
 */
function rowsScrolledUp(page) {
  return page.evaluate(
    () =>
      new Promise((resolve) => {
        const log = document.getElementById("history");
        const scroller = log.closest(".scroller");
        const seen = new Set();
        let disorder = "";
        let frames = 0;
        const step = () => {
          const seqs = Array.from(log.children, (r) => Number(r.dataset.seq));
          seqs.forEach((s, i) => {
            if (i > 0 && !(s > seqs[i - 1]) && !disorder) disorder = `row seq ${seqs[i - 1]} then ${s}`;
            seen.add(s);
          });
          const d = log.dataset;
          if ((d.complete === "true" && d.first === "0" && scroller.scrollTop === 0) || ++frames > 3000) {
            resolve({ seqs: [...seen].sort((a, b) => a - b), disorder, frames, loaded: Number(d.loaded), rows: Number(d.rows) });
            return;
          }
          scroller.scrollTop -= 300;
          requestAnimationFrame(step);
        };
        requestAnimationFrame(step);
      }),
  );
}

/** gapsIn names the seqs missing from, or repeated in, sorted seqs (empty when they run on one by one). */
function gapsIn(seqs) {
  const out = [];
  for (let i = 1; i < seqs.length; i++) if (seqs[i] !== seqs[i - 1] + 1) out.push(`${seqs[i - 1]} → ${seqs[i]}`);
  return out;
}

test("live entries racing the newest page each show once, in order: a page read before they were recorded and answered after their notifications loses none", async () => {
  const web = await startWeb(tmp());
  let late;
  const { page, errors } = await openPage(web.url, { route: async (p) => (late = await routeRpc(p)) });
  await createFake(page, "racing");
  await promptText(page, "stream 30");
  await page.getByRole("status", { name: "Session status" }).filter({ hasText: /Turn ended/ }).waitFor();
  // Opened again, its newest page read by Bridge and held back, and a
  // prompt sent at once: the page's answer reaches the page after the
  // prompt and the first 20 entries of its turn (120 more, then one).
  const held = late.arm(20);
  await page.getByRole("button", { name: "Open racing" }).click();
  await held;
  await promptText(page, "stream 120\nsay all recorded");
  const last = page.locator("#history .kind-assistant-message", { hasText: "all recorded" });
  await last.waitFor();
  assert.equal(late.passed(), 20, "the newest page was answered after 20 live entries");
  const lastSeq = Number(await last.getAttribute("data-seq"));
  await assertWholeHistory(page, lastSeq, /stream 30/);
  assert.deepEqual(errors, []);
});

test("an older page that fails while the view is at the very top is asked for again after a growing pause, the failure said in words", async () => {
  const web = await startWeb(tmp());
  let rpc;
  const { page, errors } = await openPage(web.url, { route: async (p) => (rpc = await routeRpc(p)) });
  await createFake(page, "older fails");
  await promptText(page, "stream 150");
  await page.getByRole("status", { name: "Session status" }).filter({ hasText: /Turn ended/ }).waitFor();
  // Opened afresh (the newest page), then scrolled to the very top once:
  // the older page fails twice, and nothing moves the view after.
  rpc.failOlder(2, "the record could not be read just now");
  await page.getByRole("button", { name: "Open older fails" }).click();
  await page.locator("#history li.entry").first().waitFor();
  const log = page.locator("#history");
  const first = Number(await log.getAttribute("data-loaded"));
  // (By its label, not its role: a hidden status is not in the accessibility tree.)
  const note = page.locator('[aria-label="Older entries"]');
  await note.evaluate((el) => {
    window.olderSaid = [];
    new MutationObserver(() => window.olderSaid.push(el.hidden ? "(hidden)" : el.textContent)).observe(el, {
      attributes: true,
      childList: true,
      characterData: true,
      subtree: true,
    });
  });
  await page.locator(".scroller").evaluate((el) => (el.scrollTop = 0));
  await page.waitForFunction((n) => Number(document.getElementById("history").dataset.loaded) > n, first);
  assert.equal(rpc.failed(), 2, "two older pages failed");
  const said = [...new Set(await page.evaluate(() => window.olderSaid))];
  assert.deepEqual(said, [
    "Older entries could not be loaded (internal): the record could not be read just now. Trying again in 1 s…",
    "Older entries could not be loaded (internal): the record could not be read just now. Trying again in 2 s…",
    "(hidden)",
  ]);
  assert.equal(await note.isHidden(), true, "the failure is no longer shown");
  // Scrolling on reaches the first entry.
  const up = await scrollHistory(page, -300, "stream 150");
  assert.ok(up.length <= 3000, `scrolling back reached the first entry (after 3,000 frames: ${up.at(-1).at})`);
  assert.deepEqual(errors, []);
});

test("a first page that fails is asked for again after a growing pause, the failure said in words; the session then opens as usual, the live entries that came meanwhile each shown once, in order", async () => {
  const web = await startWeb(tmp());
  let rpc;
  const { page, errors } = await openPage(web.url, { route: async (p) => (rpc = await routeRpc(p)) });
  await createFake(page, "first fails");
  await promptText(page, "stream 30");
  await page.getByRole("status", { name: "Session status" }).filter({ hasText: /Turn ended/ }).waitFor();
  // Every state of the line that says so (by its label: a hidden status is
  // not in the accessibility tree), in the views opened from now on.
  await page.evaluate(() => {
    window.firstSaid = [];
    const main = document.getElementById("main");
    new MutationObserver(() => {
      const el = main.querySelector('[aria-label="Session entries"]');
      const now = !el ? "(none)" : el.hidden ? "(hidden)" : el.textContent;
      if (window.firstSaid.at(-1) !== now) window.firstSaid.push(now);
    }).observe(main, { attributes: true, childList: true, characterData: true, subtree: true });
  });
  // Opened again: its newest page fails twice (errors in Bridge's place),
  // a prompt streams meanwhile, and the third answer, read by Bridge, is
  // held back until 20 entries of a second prompt have gone past it.
  rpc.failFirst(2, "the record could not be read just now");
  const held = rpc.arm(20);
  await page.getByRole("button", { name: "Open first fails" }).click();
  const note = page.locator('[aria-label="Session entries"]');
  await note.filter({ hasText: "Trying again in 1 s" }).waitFor();
  await promptText(page, "stream 40");
  // Shown as they come while the page fails.
  await page.locator("#history li", { hasText: "stream 40/40" }).waitFor();
  await held;
  await promptText(page, "stream 120\nsay all recorded");
  const last = page.locator("#history .kind-assistant-message", { hasText: "all recorded" });
  await last.waitFor();
  assert.equal(rpc.failedFirst(), 2, "two first pages failed");
  assert.equal(rpc.passed(), 20, "the third was answered after 20 live entries");
  await note.waitFor({ state: "hidden" });
  const said = await page.evaluate(() => window.firstSaid);
  assert.deepEqual([...new Set(said.slice(said.findIndex((t) => /Trying again/.test(t))))], [
    "The session's entries could not be loaded (internal): the record could not be read just now. Trying again in 1 s…",
    "The session's entries could not be loaded (internal): the record could not be read just now. Trying again in 2 s…",
    "(hidden)",
  ]);
  const lastSeq = Number(await last.getAttribute("data-seq"));
  await assertWholeHistory(page, lastSeq, /stream 30/);
  assert.deepEqual(errors, []);
});

test("a forward page that fails while the view is at the very bottom of a search hit's pages is asked for again after a growing pause, the failure said in words", async () => {
  const web = await startWeb(process.env.LONG_DATA_DIR);
  let rpc;
  const { page, errors } = await openPage(web.url, { route: async (p) => (rpc = await routeRpc(p)) });
  await page.getByRole("button", { name: "Open long record" }).waitFor();
  await page.getByRole("searchbox", { name: "Search query" }).fill("zanzibar");
  await page.getByRole("button", { name: "Search", exact: true }).click();
  const result = page.locator("#search-results li").first();
  await result.waitFor();
  await result.getByRole("button").click();
  await page.locator('#history [data-hit="true"]').waitFor();
  const log = page.locator("#history");
  assert.equal(await log.getAttribute("data-newest"), "false");
  const first = Number(await log.getAttribute("data-loaded"));
  // (By its label: a hidden status is not in the accessibility tree.)
  const note = page.locator('[aria-label="Newer entries"]');
  await note.evaluate((el) => {
    window.newerSaid = [];
    new MutationObserver(() => window.newerSaid.push(el.hidden ? "(hidden)" : el.textContent)).observe(el, {
      attributes: true,
      childList: true,
      characterData: true,
      subtree: true,
    });
  });
  // Scrolled to the very bottom once: the forward page fails twice, and nothing moves the view after.
  rpc.failNewer(2, "the record could not be read just now");
  await page.locator(".scroller").evaluate((el) => (el.scrollTop = el.scrollHeight));
  await page.waitForFunction((n) => Number(document.getElementById("history").dataset.loaded) > n, first);
  assert.equal(rpc.failedNewer(), 2, "two forward pages failed");
  const said = [...new Set(await page.evaluate(() => window.newerSaid))];
  assert.deepEqual(said, [
    "Newer entries could not be loaded (internal): the record could not be read just now. Trying again in 1 s…",
    "Newer entries could not be loaded (internal): the record could not be read just now. Trying again in 2 s…",
    "(hidden)",
  ]);
  // Scrolling on reaches the newest entry.
  await page.locator(".scroller").evaluate(
    (sc) =>
      new Promise((resolve) => {
        let frames = 0;
        const step = () => {
          if (document.getElementById("history").dataset.newest === "true" || ++frames > 3000) return resolve();
          sc.scrollTop += 300;
          requestAnimationFrame(step);
        };
        step();
      }),
  );
  assert.equal(await log.getAttribute("data-newest"), "true", "scrolling down reached the newest entry");
  assert.equal(await page.locator("#history li", { hasText: "entry 2999 answers" }).count(), 1, "entry 2999 is shown once");
  assert.deepEqual(errors, []);
});

test("a session opened again while a prompt the page sent runs says so, Escape cancels it there, and its end is said there", async () => {
  const web = await startWeb(tmp());
  const { page, errors } = await openPage(web.url);
  await createFake(page, "left running");
  await promptText(page, "hang");
  const note = page.getByRole("status", { name: "Session status" });
  await note.filter({ hasText: "Running… (Esc cancels)" }).waitFor();
  await createFake(page, "looked at meanwhile");
  await page.getByRole("button", { name: "Open left running" }).click();
  await page.waitForFunction(() => document.getElementById("session-title")?.textContent === "left running");
  assert.equal(await note.innerText(), "Running… (Esc cancels)", "the view opened again says the turn runs");
  await page.getByRole("textbox", { name: "Prompt text" }).press("Escape");
  await note.filter({ hasText: "Turn ended: cancelled." }).waitFor();
  const row = page.locator("#session-list li", { has: page.getByRole("button", { name: "Open left running" }) });
  assert.doesNotMatch(await row.locator(".state").innerText(), /running/, "the list no longer says running");
  assert.deepEqual(errors, []);
});

test("a click on a session's row while that session streams opens it every time, and a rename begun there stays: the row changes in place, it is not replaced", async () => {
  const web = await startWeb(tmp());
  const { page, errors } = await openPage(web.url);
  await createFake(page, "quiet one");
  await createFake(page, "streaming one");
  // The entries the list hears of (App.touch), counted: a click is pressed,
  // held while entries come, and released, as a person's click is.
  await page.evaluate(() => {
    const app = window.bridgeApp;
    const touch = app.touch.bind(app);
    window.touches = 0;
    app.touch = (id, e) => {
      window.touches++;
      touch(id, e);
    };
  });
  // An entry every few ms for far longer than the clicks take; cancelled at the end.
  const lines = [];
  for (let i = 0; i < 20000; i++) lines.push(`say tick ${i}`, "sleep 3");
  const streaming = await page.locator("#session-list li", { has: page.getByRole("button", { name: "Open streaming one" }) }).getAttribute("data-session");
  await page.evaluate(
    ([id, text]) => void window.bridgeApp.client.request("session/prompt", { sessionId: id, content: [{ type: "text", text }] }).catch(() => {}),
    [streaming, lines.join("\n")],
  );
  await page.waitForFunction(() => window.touches > 0);
  const missed = [];
  for (let i = 0; i < 20; i++) {
    const title = i % 2 === 0 ? "streaming one" : "quiet one";
    // (Its place read in the page, in one step: an element replaced meanwhile has none.)
    const box = await page.evaluate((label) => {
      const r = document.querySelector(`#session-list button[aria-label="${label}"]`).getBoundingClientRect();
      return { x: r.x, y: r.y, width: r.width, height: r.height };
    }, `Open ${title}`);
    const before = await page.evaluate(() => {
      document.querySelector("article.session").dataset.old = "true";
      return window.touches;
    });
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await page.mouse.down();
    await page.waitForFunction((n) => window.touches >= n + 2, before);
    await page.mouse.up();
    // After the frame that follows the release (its input handled): the view shown is a new one, of that session.
    const shown = await page.evaluate(
      () =>
        new Promise((resolve) =>
          requestAnimationFrame(() =>
            requestAnimationFrame(() => {
              const a = document.querySelector("article.session");
              resolve(a && a.dataset.old === undefined ? a.querySelector("#session-title")?.textContent : "(no new view)");
            }),
          ),
        ),
    );
    if (shown !== title) missed.push(`click ${i + 1} on ${title}: ${shown}`);
    assert.ok(await page.evaluate(() => window.touches) > before, "entries still streaming");
  }
  assert.deepEqual(missed, [], "every click opened its session (20 of 20)");
  // A rename begun on the streaming row stays while entries come, and saves.
  await page.getByRole("button", { name: "Rename streaming one" }).click();
  const input = page.getByRole("textbox", { name: "New title" });
  await input.fill("renamed while streaming");
  const now = await page.evaluate(() => window.touches);
  await page.waitForFunction((n) => window.touches >= n + 20, now);
  assert.equal(await input.inputValue(), "renamed while streaming", "the rename form is still there, as typed");
  // Rename again goes back to the same form; Escape closes it.
  await page.getByRole("button", { name: "Rename streaming one" }).click();
  assert.equal(await page.locator("#session-list .rename-form").count(), 1, "one rename form");
  assert.equal(await input.inputValue(), "renamed while streaming");
  await input.press("Escape");
  await input.waitFor({ state: "detached" });
  await page.getByRole("button", { name: "Rename streaming one" }).click();
  await input.fill("renamed while streaming");
  // A session made in another tab brings a refresh of the list: the rename being typed stays.
  await page.evaluate(async (cwd) => {
    const c = window.bridgeApp.client;
    const s = await c.request("session/create", { harness: "fake", cwd, title: "made elsewhere" });
    await c.request("session/prompt", { sessionId: s.sessionId, content: [{ type: "text", text: "say hello from elsewhere" }] });
  }, tmp());
  await page.getByRole("button", { name: "Open made elsewhere" }).waitFor();
  assert.equal(await input.inputValue(), "renamed while streaming", "the rename form outlives a refresh of the list");
  await page.getByRole("button", { name: "Save" }).click();
  await page.getByRole("button", { name: "Open renamed while streaming" }).waitFor();
  await page.evaluate((id) => window.bridgeApp.client.request("session/cancel", { sessionId: id }), streaming);
  assert.deepEqual(errors, []);
});

/** middleSeq is the seq of the history's row at the middle of its view. */
function middleSeq(page) {
  return page.locator(".scroller").evaluate((sc) => {
    const v = sc.getBoundingClientRect();
    const y = v.top + sc.clientTop + sc.clientHeight / 2;
    const row = Array.from(sc.querySelectorAll("#history > li")).find((r) => {
      const b = r.getBoundingClientRect();
      return b.top <= y && b.bottom >= y;
    });
    return row ? Number(row.dataset.seq) : -1;
  });
}

test("after a reconnect, a session opened at a search hit opens again where its view was, the hit highlighted, not at its newest entries", async () => {
  const web = await startWeb(process.env.LONG_DATA_DIR);
  const { page, errors } = await openPage(web.url);
  await page.getByRole("button", { name: "Open long record" }).waitFor();
  await page.getByRole("searchbox", { name: "Search query" }).fill("zanzibar");
  await page.getByRole("button", { name: "Search", exact: true }).click();
  const result = page.locator("#search-results li").first();
  await result.waitFor();
  await result.getByRole("button").click();
  const hit = page.locator('#history [data-hit="true"]');
  await hit.waitFor();
  // The user moves a little from the hit.
  await page.locator(".scroller").evaluate((el) => (el.scrollTop -= 100));
  const before = await middleSeq(page);
  assert.ok(before > 0, "a row is in the middle of the view");
  // The server ends this page's connection.
  await page.evaluate(async () => {
    const c = window.bridgeApp.client;
    await c.request("shutdown");
    await c.connection.sendNotification("exit");
  });
  await page.waitForFunction(() => document.body.dataset.reconnects === "1");
  await hit.waitFor();
  assert.match(await hit.innerText(), /entry 1500 saw the zanzibar quokka/);
  const log = page.locator("#history");
  assert.equal(await log.getAttribute("data-newest"), "false", "not opened at the newest entries");
  assert.ok(Number(await log.getAttribute("data-loaded")) < 100, "the page around the place, not the whole record");
  assert.equal(await middleSeq(page), before, "the same row in the middle of the view");
  assert.deepEqual(errors, []);
});

/**
 * within resolves to what p resolves to, or fails naming what once ms have
 * passed: it bounds a wait that has no bound of its own (page.evaluate, a
 * DevTools call), so that a hang is reported as such, not as a stuck run.
 * The bounds are minutes: they catch hangs, they do not time anything.
 */
async function within(ms, what, p) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: still waiting after ${ms / 1000} s (a hang)`)), ms);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

const overflowLine = /a client stopped reading; closing its connection/;

test("a stalled tab is disconnected when its queue overflows or a message waits unread, delays no other tab, then reconnects and reloads", async () => {
  // A small queue bound, so that a few tens of megabytes overflow it.
  const web = await startWeb(tmp(), { BRIDGE_WEB_QUEUE_MESSAGES: "128" });
  const stalled = await openPage(web.url);
  await createFake(stalled.page, "watched");
  const sessionId = await within(60_000, "reading the session's id", stalled.page.evaluate(() => window.bridgeApp.current.id));
  // The working tab lists the session (each entry touches its row) and
  // prompts it.
  const working = await openPage(web.url);
  await working.page.getByRole("button", { name: "Open watched" }).waitFor();
  // The first tab stops at its next statement (the next message it is
  // given) and so stops reading its WebSocket.
  const cdp = await stalled.page.context().newCDPSession(stalled.page);
  await within(60_000, "Debugger.enable", cdp.send("Debugger.enable"));
  await within(60_000, "Debugger.pause", cdp.send("Debugger.pause"));
  // Turns of about 24 MB each (a 12 MB prompt, recorded as the user's
  // message, then 100 replies of 120 KB), until bridge web gives up on the
  // stalled tab: when its queue overflows, or when a message sent to it has
  // waited unread for 30 s, whichever comes first. How much a paused tab's
  // socket and browser absorb before that varies (Chromium keeps reading for
  // a while; the kernel's receive buffer may grow to tens of megabytes).
  // One turn is under both of a connection's queue bounds (128 messages,
  // 32 MiB), so a tab that reads, however slowly, never overflows: with 300
  // replies of 60 KB a turn, the working tab itself fell 128 messages behind
  // on a loaded machine and was closed, and its prompt never answered.
  const lines = 100;
  let closed = false;
  const closing = web.stderrLine(overflowLine).then(() => (closed = true));
  let lastRound = -1;
  for (let round = 0; !closed; round++) {
    if (round === 8) {
      // On a loaded machine the line may come late: give it a minute more.
      await Promise.race([closing, new Promise((r) => setTimeout(r, 60000))]);
      assert.ok(closed, "bridge web never closed the stalled tab");
      break;
    }
    // …while the working tab gets each whole turn. (The prompt is made in
    // the page: 12 MB through DevTools took longer than the turn.)
    const turn = await within(
      300_000,
      `round ${round}: the working tab's session/prompt`,
      working.page.evaluate(
        ([sessionId, round, lines]) => {
          const pad = "z".repeat(120 << 10);
          const text = Array.from({ length: lines }, (_, i) => `say ${round}:${String(i).padStart(4, "0")} ${pad}`).join("\n");
          return window.bridgeApp.client
            .request("session/prompt", { sessionId, content: [{ type: "text", text }] })
            .then((r) => r, (err) => ({ failed: String(err?.message ?? err) }));
        },
        [sessionId, round, lines],
      ),
    );
    assert.equal(turn.failed, undefined, `round ${round}: the working tab's prompt failed (was it disconnected?)`);
    assert.equal(turn.stopReason, "end_turn");
    lastRound = round;
    if (!closed) await new Promise((r) => setTimeout(r, 500)); // let bridge web's stderr reach us
  }
  assert.equal(web.stderrText().match(new RegExp(overflowLine.source, "g")).length, 1, "bridge web closed one connection, the stalled tab's");
  await within(60_000, "Debugger.resume", cdp.send("Debugger.resume"));
  const state = () => within(60_000, "reading the page's state", working.page.evaluate(() => [document.body.dataset.state, document.body.dataset.reconnects]));
  assert.deepEqual(await state(), ["connected", undefined], "the working tab kept its connection");
  // The stalled tab, running again, learns why it was closed, reconnects
  // and reloads the list and the open session (its newest page has the
  // entries it missed).
  await stalled.page.waitForFunction(() => document.body.dataset.reconnects === "1", null, { timeout: 120_000 });
  // Why: said in a window/logMessage error ahead of the close, and in the
  // close frame (1008) unless the tab took longer than the close handshake
  // allows to read what came before it.
  assert.match(await stalled.page.locator("#status").innerText(), /Reconnected \(Bridge had closed the connection: .*fell too far behind; reconnect and reload\)/);
  await stalled.page.locator("#history .kind-assistant-message", { hasText: `${lastRound}:0099` }).waitFor();
  assert.equal(await within(60_000, "reading the stalled tab's state", stalled.page.evaluate(() => document.body.dataset.state)), "connected");
  // The working tab still works: a prompt of its own streams into the session it opens.
  await working.page.getByRole("button", { name: "Open watched" }).click();
  await promptText(working.page, "say still working");
  await working.page.locator("#history .kind-assistant-message", { hasText: "still working" }).waitFor();
  assert.deepEqual(working.errors, []);
  assert.deepEqual(stalled.errors, []);
});

/** responsive resolves to how long the page took to paint a frame, once its script is free. */
async function responsive(page) {
  return page.evaluate(() => new Promise((resolve) => {
    const t0 = performance.now();
    requestAnimationFrame(() => setTimeout(() => resolve(performance.now() - t0)));
  }));
}

test("80 KB of hostile Markdown opens without freezing the page; snake_case, links and code survive", async () => {
  const web = await startWeb(tmp());
  const { page, errors } = await openPage(web.url);
  await createFake(page, "hostile");
  // '[a](' ×20,000 once took a backtracking link pattern minutes, in
  // every tab that showed it.
  const hostile = "[a](".repeat(20_000);
  await promptText(page, `say ${hostile}\nsay ids s_01M8XY and e_01M8ZZ, see [the docs](https://example.com/a_b) or https://example.com/x_y_z; run \`go test -run A_b\``);
  const live = page.locator("#history .kind-assistant-message", { hasText: "[a]([a](" });
  await live.waitFor();
  await responsive(page);
  // Its beginning, then all of it on demand.
  await live.getByRole("button", { name: "Show all 80,000 characters" }).click();
  await responsive(page);
  assert.equal((await live.locator(".md").innerText()).trim(), hostile, "the hostile text is shown as written");
  // The same renderer keeps snake_case, links and code.
  const rendered = page.locator("#history .kind-assistant-message", { hasText: "s_01M8XY" });
  await rendered.waitFor();
  assert.match(await rendered.innerText(), /ids s_01M8XY and e_01M8ZZ, see the docs or https:\/\/example\.com\/x_y_z; run go test -run A_b/);
  assert.equal(await rendered.locator("em").count(), 0, "no underscore became emphasis");
  assert.deepEqual(
    await rendered.locator("a").evaluateAll((as) => as.map((a) => [a.textContent, a.getAttribute("href")])),
    [
      ["the docs", "https://example.com/a_b"],
      ["https://example.com/x_y_z", "https://example.com/x_y_z"],
    ],
  );
  assert.equal(await rendered.locator("code").innerText(), "go test -run A_b");
  // Opened afresh (as another tab would), the session shows it again and
  // the page keeps answering.
  await page.reload();
  await page.getByRole("button", { name: "Open hostile" }).click();
  const again = page.locator("#history .kind-assistant-message", { hasText: "[a]([a](" });
  await again.waitFor();
  await again.getByRole("button", { name: /^Show all/ }).click();
  await responsive(page);
  assert.equal((await again.locator(".md").innerText()).trim(), hostile);
  await page.getByRole("textbox", { name: "Prompt text" }).fill("still typing");
  assert.equal(await page.getByRole("textbox", { name: "Prompt text" }).inputValue(), "still typing");
  assert.deepEqual(errors, []);
});

test("chat conventions: Enter sends, Shift+Enter is a new line, a prompt written during a turn is queued and runs after it, Escape cancels", async () => {
  const web = await startWeb(tmp());
  const { page, errors } = await openPage(web.url);
  await createFake(page, "conventions");
  const box = page.getByRole("textbox", { name: "Prompt text" });
  assert.match(await page.locator("#prompt-hint").innerText(), /Enter sends · Shift\+Enter adds a line/);
  // Shift+Enter adds a line; Enter sends the two lines as one prompt.
  await box.click();
  await box.pressSequentially("say first");
  await box.press("Shift+Enter");
  await box.pressSequentially("hang");
  assert.equal(await box.inputValue(), "say first\nhang");
  await box.press("Enter");
  await page.locator("#history .kind-assistant-message", { hasText: "first" }).waitFor();
  assert.equal(await box.inputValue(), "", "Enter sent the prompt");
  // Written while the turn runs (it waits until cancelled): queued, shown,
  // and run once that turn ends (Escape cancels it; the queue stays).
  await box.fill("say second");
  await box.press("Enter");
  const queued = page.getByRole("list", { name: "Queued prompts" });
  await queued.getByText("say second").waitFor();
  assert.equal(await page.locator("#history .kind-assistant-message", { hasText: "second" }).count(), 0, "not sent while the turn runs");
  await box.press("Escape");
  await page.locator("#history .kind-assistant-message", { hasText: "second" }).waitFor();
  await queued.waitFor({ state: "hidden" });
  const said = await page.locator("#history .kind-assistant-message .md").allInnerTexts();
  assert.deepEqual(said.map((x) => x.trim()), ["first", "second"], "the queued prompt ran after the first turn");
  await page.getByRole("status", { name: "Session status" }).filter({ hasText: /^Turn ended\.$/ }).waitFor();
  // Escape cancels a running turn.
  await box.fill("hang");
  await box.press("Enter");
  await page.getByRole("status", { name: "Session status" }).filter({ hasText: /Running/ }).waitFor();
  await box.press("Escape");
  await page.getByRole("status", { name: "Session status" }).filter({ hasText: /cancelled/ }).waitFor();
  // Speakers in words; per-message actions only on hover or focus.
  const user = page.locator("#history .kind-user-message").first();
  assert.match(await user.locator(".speaker").innerText(), /^You$/);
  assert.match(await page.locator("#history .kind-assistant-message .speaker").first().innerText(), /^Fake agent$/);
  const fork = user.getByRole("button", { name: /^Fork from here \(entry \d+\)$/ });
  await page.mouse.move(0, 0);
  assert.equal(await fork.evaluate((b) => getComputedStyle(b.parentElement).opacity), "0", "hidden until hover or focus");
  await fork.focus();
  assert.equal(await fork.evaluate((b) => getComputedStyle(b.parentElement).opacity), "1", "shown on focus");
  assert.deepEqual(errors, []);
});

test("approvals from the fake harness: a card in the session and a flag in the list, the answer in the history; tool cards; a model switch with its downgrade checkpoint", async () => {
  const web = await startWeb(tmp());
  const { page, errors } = await openPage(web.url);
  await createFake(page, "asks");
  await promptText(page, "ask Bash rm -rf build\nask Bash ls docs\ntool Read src/main_file.go");
  const approval = page.getByRole("group", { name: /^Approval: / });
  await approval.waitFor();
  assert.match(await approval.innerText(), /Fake agent asks to run[\s\S]*Bash: rm -rf build/);
  assert.deepEqual(await approval.getByRole("button").allInnerTexts(), ["Allow once", "Allow always", "Reject once", "Reject always"]);
  await page.locator("#session-list li.waiting", { hasText: "Waiting for you (1)" }).waitFor();
  await checkAccessibility(page, "a session with an approval waiting");
  await approval.getByRole("button", { name: "Reject once" }).click();
  await approval.getByText("Bash: ls docs").waitFor();
  await approval.getByRole("button", { name: "Allow once" }).click();
  await page.getByRole("status", { name: "Session status" }).filter({ hasText: /Turn ended/ }).waitFor();
  const resolved = await page.locator("#history .kind-approval-resolved").allInnerTexts();
  assert.equal(resolved.length, 2);
  assert.match(resolved[0], /Rejected once by you/);
  assert.match(resolved[1], /Allowed once by you/);
  // The refused call and the allowed one as tool cards.
  const cards = page.locator("#history .entry.tool");
  assert.match(await cards.nth(0).locator("summary").innerText(), /Bash[\s\S]*failed/);
  assert.match(await cards.nth(1).locator("summary").innerText(), /Bash[\s\S]*ls docs[\s\S]*done/);
  assert.match(await page.locator("#history .entry.tool", { hasText: "main_file.go" }).locator("summary").innerText(), /Read[\s\S]*src\/main_file\.go[\s\S]*done/);
  // Model and effort: up to the large model, then down to the small one,
  // which is a downgrade: Bridge saves a checkpoint first, shown as its card.
  await page.getByRole("button", { name: "Model…" }).click();
  await page.getByRole("combobox", { name: "Model" }).waitFor();
  await page.getByRole("combobox", { name: "Model" }).selectOption("fake-large");
  await page.getByRole("button", { name: "Switch" }).click();
  await page.locator("#model-panel .model-result", { hasText: "Now on fake-large" }).waitFor();
  await page.getByRole("combobox", { name: "Model" }).selectOption("fake-small");
  await page.getByRole("button", { name: "Switch" }).click();
  await page.locator("#model-panel .model-result", { hasText: "Now on fake-small" }).waitFor();
  assert.match(await page.locator("#model-panel .model-result").innerText(), /downgrade/i);
  const checkpoint = page.locator("#history .card-checkpoint", { hasText: "before_downgrade" });
  await checkpoint.waitFor();
  if (process.env.SCREENSHOTS) await shoot(page, "session");
  assert.deepEqual(errors, []);
});

test("an approval in a hidden tab: the title counts it, a browser notification (once allowed) names the agent, and clicking it opens the session", async () => {
  const web = await startWeb(tmp());
  // Notifications allowed for the page, as after "Notify me". Headless
  // Chromium keeps every tab visible, so the test decides what
  // document.hidden says (and fires visibilitychange); the Notification the
  // page makes is the browser's own, watched as it is constructed.
  const context = await browser.newContext({ permissions: ["notifications"] });
  after(() => context.close());
  await context.addInitScript(() => {
    let hidden = false;
    Object.defineProperty(Document.prototype, "hidden", { configurable: true, get: () => hidden });
    Object.defineProperty(Document.prototype, "visibilityState", { configurable: true, get: () => (hidden ? "hidden" : "visible") });
    window.setHiddenForTest = (h) => {
      hidden = h;
      document.dispatchEvent(new Event("visibilitychange"));
    };
    const Real = window.Notification;
    window.notificationsMade = [];
    window.Notification = class extends Real {
      constructor(title, options) {
        super(title, options);
        window.notificationsMade.push(this);
      }
    };
  });
  const { page, errors } = await openPage(web.url, { context });
  await createFake(page, "waits while away");
  assert.equal(await page.evaluate(() => Notification.permission), "granted");
  assert.equal(await page.title(), "Bridge");
  // The user looks elsewhere; the agent asks.
  await page.evaluate(() => window.setHiddenForTest(true));
  await promptText(page, "ask Bash rm -rf build\nask Bash ls docs");
  await page.getByRole("group", { name: /^Approval: / }).waitFor();
  await page.waitForFunction(() => window.notificationsMade.length === 1);
  const made = await page.evaluate(() => window.notificationsMade.map((n) => ({ title: n.title, body: n.body, tag: n.tag })));
  assert.equal(made[0].title, "Fake agent is waiting for you");
  assert.match(made[0].body, /^waits while away: Bash: rm -rf build$/);
  assert.match(made[0].tag, /^bridge-approval-/);
  assert.equal(await page.title(), "(1) Waiting for you — Bridge");
  // Back in the tab, but on another view: the notification's click opens the session.
  await page.evaluate(() => window.setHiddenForTest(false));
  await page.getByRole("button", { name: "Doctor" }).click();
  await page.locator("#doctor-table").waitFor();
  assert.ok(await page.locator("main").isHidden());
  await page.evaluate(() => window.notificationsMade[0].onclick(new Event("click")));
  const approval = page.getByRole("group", { name: /^Approval: / });
  await approval.waitFor();
  assert.ok(await page.locator("main").isVisible(), "the click opened the session view");
  await approval.getByRole("button", { name: "Allow once" }).click();
  // The second question comes while the tab is visible: no notification.
  await approval.getByText("Bash: ls docs").waitFor();
  assert.equal(await page.title(), "(1) Waiting for you — Bridge");
  await approval.getByRole("button", { name: "Allow once" }).click();
  await page.getByRole("status", { name: "Session status" }).filter({ hasText: /Turn ended/ }).waitFor();
  assert.equal(await page.title(), "Bridge");
  assert.equal(await page.evaluate(() => window.notificationsMade.length), 1, "no notification for a visible tab");
  assert.deepEqual(errors, []);
});

test("an approval nobody answers times out: its card goes, and the history says the preset's policy decided and why, also after a reload", async () => {
  const dir = tmp();
  writeFileSync(path.join(dir, "config.json"), JSON.stringify({ approvalTimeoutSeconds: 2 }), { mode: 0o600 });
  const web = await startWeb(dir);
  const { page, errors } = await openPage(web.url);
  await createFake(page, "nobody answers");
  await promptText(page, "ask Bash rm -rf build");
  const approval = page.getByRole("group", { name: /^Approval: / });
  await approval.waitFor();
  assert.equal(await page.title(), "(1) Waiting for you — Bridge");
  await page.getByRole("status", { name: "Session status" }).filter({ hasText: /Turn ended/ }).waitFor();
  await approval.waitFor({ state: "detached" });
  assert.equal(await page.title(), "Bridge");
  assert.equal(await page.locator("#session-list li.waiting").count(), 0, "the list no longer flags the session");
  const want = /Rejected once after no answer came \(the preset's policy\) — the client did not answer within 2s\./;
  const resolved = page.locator("#history .kind-approval-resolved");
  assert.match((await resolved.innerText()).trim(), want);
  assert.match(await page.locator("#history .entry.tool").locator("summary").innerText(), /Bash[\s\S]*failed/, "the refused call");
  await page.reload();
  await page.getByRole("button", { name: "Open nobody answers" }).click();
  await resolved.waitFor();
  assert.match((await resolved.innerText()).trim(), want);
  assert.match(await page.locator("#history .kind-approval-requested").innerText(), /Fake agent asked: Bash: rm -rf build/);
  await checkAccessibility(page, "a timed-out approval in the history");
  assert.deepEqual(errors, []);
});

test("the context gauge is a bar: a recorded context reading shows as a meter in the history and in the session's header", async () => {
  const dataDir = process.env.GAUGE_DATA_DIR;
  assert.ok(dataDir, "GAUGE_DATA_DIR (a data directory with a Codex session holding context readings) must be set");
  const web = await startWeb(dataDir);
  const { page, errors } = await openPage(web.url);
  await page.getByRole("button", { name: "Open context readings" }).click();
  const meters = page.locator("#history meter");
  await meters.first().waitFor();
  // Two readings: 120,000 then 170,000 of a 200,000-token window.
  assert.deepEqual(
    await meters.evaluateAll((ms) => ms.map((m) => [m.value, m.max, m.getAttribute("aria-label")])),
    [
      [120000, 200000, "Context: 120,000 of 200,000 tokens (60%)"],
      [170000, 200000, "Context: 170,000 of 200,000 tokens (85%)"],
    ],
  );
  // The header shows the newest reading, as a bar too.
  const header = page.locator(".session > header .header-gauge meter");
  assert.equal(await header.getAttribute("aria-label"), "Context: 170,000 of 200,000 tokens (85%)");
  const box = await header.boundingBox();
  assert.ok(box && box.width > 40 && box.height > 4, `the header gauge is drawn as a bar (${JSON.stringify(box)})`);
  // The meter is drawn filled in proportion: 85% is past high (85% of the window), so the browser shows it as the bad range.
  assert.equal(await header.evaluate((m) => m.high), 170000);
  assert.match(await page.locator(".session > header .header-gauge").innerText(), /Context: 170,000 of 200,000 tokens \(85%\)/);
  await checkAccessibility(page, "context gauges");
  if (process.env.SCREENSHOTS) await shoot(page, "gauge");
  assert.deepEqual(errors, []);
});

test("360 px: no horizontal scroll, the session list opens as a drawer; search and doctor are readable panels; axe finds nothing serious", async () => {
  const web = await startWeb(tmp());
  const { page, errors } = await openPage(web.url);
  await createFake(page, "a rather long session title that must wrap on a phone screen");
  await promptText(
    page,
    `say ${"averyveryverylongwordwithoutanyspace".repeat(6)} and https://example.com/${"x".repeat(120)}\ntool Bash ${"--flag ".repeat(40)}\nplan completed:read the code; in_progress:check the narrow layout; pending:run the tests`,
  );
  await page.getByRole("status", { name: "Session status" }).filter({ hasText: /Turn ended/ }).waitFor();
  await page.locator("#history .entry.tool details").first().evaluate((d) => (d.open = true));
  // A plan as a checklist.
  const plan = page.getByRole("list", { name: "Plan" });
  assert.deepEqual(await plan.locator("li").evaluateAll((ls) => ls.map((l) => l.dataset.status)), ["completed", "in_progress", "pending"]);
  assert.match(await plan.innerText(), /read the code[\s\S]*check the narrow layout[\s\S]*run the tests/);
  await page.getByRole("searchbox", { name: "Search query" }).fill("narrow");
  await page.getByRole("button", { name: "Search", exact: true }).click();
  const panel = page.getByRole("region", { name: "Search" });
  await panel.locator("#search-results li").first().waitFor();
  assert.match(await panel.locator(".search-summary").innerText(), /^\d+ match(es)? for “narrow”\.$/);
  assert.match(await panel.locator("#search-results li .hit-meta").first().innerText(), /^Fake agent · \S.* · \S/);
  await checkAccessibility(page, "search results");
  if (process.env.SCREENSHOTS) await shoot(page, "search");
  await page.getByRole("button", { name: "Doctor" }).click();
  await page.locator("#doctor-table").waitFor();
  await checkAccessibility(page, "doctor");
  if (process.env.SCREENSHOTS) {
    await page.getByRole("button", { name: "Details of Fake agent" }).click();
    await shoot(page, "doctor");
  }
  await page.setViewportSize({ width: 360, height: 740 });
  await noHorizontalScroll(page, "360 px, doctor");
  await page.getByRole("button", { name: "Sessions", exact: true }).click();
  const toggle = page.locator("#toggle-sidebar");
  assert.ok(await toggle.isVisible(), "a toggle for the session list");
  // The list is out of the way (it slides off to the left).
  await page.waitForFunction(() => document.getElementById("sessions").getBoundingClientRect().right <= 0);
  await toggle.click();
  await page.getByRole("button", { name: /^Open a rather long session title/ }).click();
  await page.locator("#history .entry.tool").first().waitFor();
  // Opening a session closes the drawer.
  await page.waitForFunction(() => document.getElementById("sessions").getBoundingClientRect().right <= 0);
  await page.locator("#history .entry.tool details").first().evaluate((d) => (d.open = true));
  await noHorizontalScroll(page, "360 px, session");
  await checkAccessibility(page, "360 px session");
  // Dark theme: the page follows prefers-color-scheme.
  await page.emulateMedia({ colorScheme: "dark" });
  const dark = await page.evaluate(() => getComputedStyle(document.querySelector(".scroller")).backgroundColor);
  await page.emulateMedia({ colorScheme: "light" });
  const light = await page.evaluate(() => getComputedStyle(document.querySelector(".scroller")).backgroundColor);
  assert.notEqual(dark, light);
  await page.emulateMedia({ colorScheme: "dark" });
  await checkAccessibility(page, "dark theme");
  // The favicon is served (no 404 in the console).
  const icon = await page.evaluate(async () => (await fetch(document.querySelector('link[rel="icon"]').href)).status);
  assert.equal(icon, 200);
  assert.deepEqual(errors, []);
});
