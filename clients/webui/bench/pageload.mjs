// pageload.mjs measures the WebUI in Chromium with its performance marks:
// page load to the session list on screen (from navigation start to the
// frame after bridge:sessions-shown, see painted below), and opening a
// session to its newest page on screen (bridge:open-start → the frame after
// bridge:newest-shown), and, in the first rounds,
// scrolling 1,000 entries back: the history is scrolled to its top on
// every frame (older pages load as it nears the top) until 1,000 entries
// are loaded and the oldest of them is in view, and the time between
// frames is kept. The history's rows are virtualized (only those near the
// view are in the page), so the list says what it holds in data
// attributes: data-loaded (entries received) and data-first (the index of
// the first row in the page; 0 is the oldest loaded); the most rows the
// page held at once is reported as "shown". Run by BenchmarkWebUI
// (clients/webui/bench_test.go), which seeds the session and starts one
// bridge web per build to compare (the build under test, and a baseline
// build when WEBUI_BENCH_BASE_BIN is set). The builds take turns, one page
// load each, so that the machine's load weighs on both alike.
//
// A page load is a new tab in a running browser, as when a user opens the
// link bridge web printed: the tab is opened, the browser is left to settle
// (WEBUI_BENCH_SETTLE_MS, default 1000: opening a tab builds the browser's
// own window parts, such as the address bar's popup, a WebUI page of its
// own that took about 140 ms of CPU, on this machine's two cores, during
// the page's load), then the WebUI is navigated to. The earlier way, a new
// browser window per load navigated at once and timed to
// bridge:sessions-shown, is also taken in every round and reported as
// "window" (the figure earlier sessions recorded).
//
// painted: the page's marks are set when the page has built what it shows;
// an init script (for every build alike) adds bridge:sessions-painted and
// bridge:newest-painted in the task after the next animation frame, which
// runs once that frame's style, layout and paint are done, and says so on
// the console, which is what the benchmark waits for (see painting).
//
// WEBUI_BENCH_THROTTLE=N slows the page's CPU N times (DevTools'
// Emulation.setCPUThrottlingRate) for every build alike.
//
// WEBUI_BENCH_ROUNDS=N loads the page N times per build (default: the
// ROUNDS argument).
//
// Prints one JSON object: {"LABEL": {"load": [ms…], "window": [ms…], "open": [ms…],
// "frames": [ms…], "shown": [rows…], "phases": {…}}, …}; phases are the median times from
// navigation start of the steps before the list: the document's response,
// DOMContentLoaded, and the page's own marks where a build has them.
//
// Usage: CHROMIUM=/usr/bin/chromium node pageload.mjs SESSION_ID ROUNDS LABEL=URL [LABEL=URL…]
import { chromium } from "playwright-core";

const [sessionId, roundsArg, ...targets] = process.argv.slice(2);
const rounds = Number(process.env.WEBUI_BENCH_ROUNDS ?? roundsArg ?? 20);
const throttle = Number(process.env.WEBUI_BENCH_THROTTLE ?? 1);
const settle = Number(process.env.WEBUI_BENCH_SETTLE_MS ?? 1000);
const builds = targets.map((t) => {
  const i = t.indexOf("=");
  return { label: t.slice(0, i), url: t.slice(i + 1), load: [], window: [], open: [], frames: [], shown: [], phases: {} };
});
if (!sessionId || builds.length === 0) throw new Error("usage: pageload.mjs SESSION_ID ROUNDS LABEL=URL [LABEL=URL…]");
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM, args: ["--no-sandbox"] });
const tabs = await browser.newContext({ viewport: { width: 1280, height: 800 } });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** painted wraps performance.mark: a bridge:…-shown mark is followed by bridge:…-painted once its frame is done. */
function painted() {
  const mark = performance.mark.bind(performance);
  performance.mark = (name, options) => {
    const m = mark(name, options);
    if (name === "bridge:sessions-shown" || name === "bridge:newest-shown") {
      const then = name.replace("-shown", "-painted");
      performance.clearMarks(then);
      requestAnimationFrame(() =>
        setTimeout(() => {
          mark(then);
          console.debug(then);
        }),
      );
    }
    return m;
  };
}
await tabs.addInitScript(painted);
const waitMark = (page, name) => page.waitForFunction((n) => performance.getEntriesByName(n).length > 0, name, { timeout: 120_000 });
/**
 * painting waits for a bridge:…-painted mark by the console message the init
 * script writes with it: waiting with page.waitForFunction would put
 * Playwright's own script into the page while it loads (about 25 ms of the
 * page's main thread, measured in a trace).
 */
const painting = (page, name) => page.waitForEvent("console", { predicate: (m) => m.text() === name, timeout: 120_000 });

/** inWindow loads the page the earlier way (a new browser window, navigated at once) and records the time to bridge:sessions-shown. */
async function inWindow(b) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await page.goto(b.url);
  await waitMark(page, "bridge:sessions-shown");
  b.window.push(await page.evaluate(() => performance.getEntriesByName("bridge:sessions-shown")[0].startTime));
  await page.close();
}

/** once loads the page in a new tab, opens the session and (scroll) scrolls 1,000 entries back, recording into b. */
async function once(b, scroll) {
  const page = await tabs.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  if (throttle > 1) {
    const cdp = await page.context().newCDPSession(page);
    await cdp.send("Emulation.setCPUThrottlingRate", { rate: throttle });
  }
  await sleep(settle);
  const listed = painting(page, "bridge:sessions-painted");
  await page.goto(b.url);
  await listed;
  const t = await page.evaluate(() => {
    const nav = performance.getEntriesByType("navigation")[0];
    const out = { response: nav.responseEnd, domContentLoaded: nav.domContentLoadedEventStart };
    for (const r of performance.getEntriesByType("resource")) {
      const name = new URL(r.name).pathname.slice(1);
      if (name === "app.js" || name === "app.css") out[`${name}-response`] = r.responseEnd;
    }
    for (const m of performance.getEntriesByType("mark")) if (m.name.startsWith("bridge:")) out[m.name.slice(7)] = m.startTime;
    return out;
  });
  b.load.push(t["sessions-painted"]);
  for (const [k, v] of Object.entries(t)) (b.phases[k] ??= []).push(v);
  const opened = painting(page, "bridge:newest-painted");
  await page.locator(`#session-list li[data-session="${sessionId}"] button.open`).click();
  await opened;
  const open = await page.evaluate(() => {
    const at = (n) => performance.getEntriesByName(n)[0].startTime;
    return { painted: at("bridge:newest-painted") - at("bridge:open-start"), shown: at("bridge:newest-shown") - at("bridge:open-start") };
  });
  b.open.push(open.painted);
  (b.phases["open-shown"] ??= []).push(open.shown);
  if ((await page.locator("#history li").count()) === 0) throw new Error(`${b.label}: the newest page showed no entries`);
  if (scroll) {
    const r = await page.evaluate(
      () =>
        new Promise((resolve) => {
          const scroller = document.querySelector(".scroller");
          const log = document.getElementById("history");
          // An older build without the attributes: every row is in the page.
          const loaded = () => Number(log.dataset.loaded ?? log.children.length);
          const top = () => (log.dataset.first ?? "0") === "0";
          const out = [];
          let shown = 0;
          let last = performance.now();
          const step = (now) => {
            out.push(now - last);
            last = now;
            shown = Math.max(shown, log.children.length);
            if ((loaded() >= 1000 && top()) || out.length > 20000) return resolve({ frames: out.slice(1), shown, loaded: loaded() });
            scroller.scrollTop = 0;
            requestAnimationFrame(step);
          };
          requestAnimationFrame(step);
        }),
    );
    if (r.loaded < 1000) throw new Error(`${b.label}: scrolling back did not reach 1,000 entries`);
    b.frames.push(...r.frames);
    b.shown.push(r.shown);
  }
  if (errors.length > 0) throw new Error(`${b.label}: errors in the page: ${errors.join("; ")}`);
  await page.close();
}

try {
  for (let i = 0; i < rounds; i++) {
    // Alternate which build goes first, so that neither always follows the other.
    const order = i % 2 === 0 ? builds : [...builds].reverse();
    for (const b of order) await once(b, i < 5);
    for (const b of order) await inWindow(b);
  }
} finally {
  await browser.close();
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const out = {};
for (const b of builds) {
  const phases = {};
  for (const [k, v] of Object.entries(b.phases)) phases[k] = Math.round(median(v) * 10) / 10;
  out[b.label] = { load: b.load, window: b.window, open: b.open, frames: b.frames, shown: b.shown, phases };
}
console.log(JSON.stringify(out));
