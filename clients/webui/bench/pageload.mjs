// pageload.mjs measures the WebUI in Chromium with its performance marks:
// page load to the session list shown (bridge:sessions-shown, from
// navigation start), and opening a session to its newest page shown
// (bridge:open-start → bridge:newest-shown), and, in the first rounds,
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
// WEBUI_BENCH_THROTTLE=N slows the page's CPU N times (DevTools'
// Emulation.setCPUThrottlingRate) for every build alike.
//
// WEBUI_BENCH_ROUNDS=N loads the page N times per build (default: the
// ROUNDS argument).
//
// Prints one JSON object: {"LABEL": {"load": [ms…], "open": [ms…],
// "frames": [ms…], "shown": [rows…], "phases": {…}}, …}; phases are the median times from
// navigation start of the steps before the list: the document's response,
// DOMContentLoaded, and the page's own marks where a build has them.
//
// Usage: CHROMIUM=/usr/bin/chromium node pageload.mjs SESSION_ID ROUNDS LABEL=URL [LABEL=URL…]
import { chromium } from "playwright-core";

const [sessionId, roundsArg, ...targets] = process.argv.slice(2);
const rounds = Number(process.env.WEBUI_BENCH_ROUNDS ?? roundsArg ?? 20);
const throttle = Number(process.env.WEBUI_BENCH_THROTTLE ?? 1);
const builds = targets.map((t) => {
  const i = t.indexOf("=");
  return { label: t.slice(0, i), url: t.slice(i + 1), load: [], open: [], frames: [], shown: [], phases: {} };
});
if (!sessionId || builds.length === 0) throw new Error("usage: pageload.mjs SESSION_ID ROUNDS LABEL=URL [LABEL=URL…]");
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM, args: ["--no-sandbox"] });

/** once loads the page, opens the session and (scroll) scrolls 1,000 entries back, recording into b. */
async function once(b, scroll) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  if (throttle > 1) {
    const cdp = await page.context().newCDPSession(page);
    await cdp.send("Emulation.setCPUThrottlingRate", { rate: throttle });
  }
  await page.goto(b.url);
  await page.waitForFunction(() => performance.getEntriesByName("bridge:sessions-shown").length > 0, null, { timeout: 120_000 });
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
  b.load.push(t["sessions-shown"]);
  for (const [k, v] of Object.entries(t)) (b.phases[k] ??= []).push(v);
  await page.locator(`#session-list li[data-session="${sessionId}"] button.open`).click();
  await page.waitForFunction(() => performance.getEntriesByName("bridge:newest-shown").length > 0, null, { timeout: 120_000 });
  b.open.push(
    await page.evaluate(
      () => performance.getEntriesByName("bridge:newest-shown")[0].startTime - performance.getEntriesByName("bridge:open-start")[0].startTime,
    ),
  );
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
  }
} finally {
  await browser.close();
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const out = {};
for (const b of builds) {
  const phases = {};
  for (const [k, v] of Object.entries(b.phases)) phases[k] = Math.round(median(v) * 10) / 10;
  out[b.label] = { load: b.load, open: b.open, frames: b.frames, shown: b.shown, phases };
}
console.log(JSON.stringify(out));
