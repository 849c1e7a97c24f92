// pageload.mjs measures the WebUI in Chromium with its performance marks:
// page load to the session list shown (bridge:sessions-shown, from
// navigation start), and opening a session to its newest page shown
// (bridge:open-start → bridge:newest-shown), and, in the first rounds,
// scrolling 1,000 entries back: the history is scrolled to its top on
// every frame (older pages load as it nears the top) until 1,000 entries
// are shown, and the time between frames is kept. Run by BenchmarkWebUI
// (clients/webui/bench_test.go), which seeds the session and starts one
// bridge web per build to compare (the build under test, and a baseline
// build when WEBUI_BENCH_BASE_BIN is set). The builds take turns, one page
// load each, so that the machine's load weighs on both alike.
//
// WEBUI_BENCH_THROTTLE=N slows the page's CPU N times (DevTools'
// Emulation.setCPUThrottlingRate) for every build alike.
//
// Prints one JSON object: {"LABEL": {"load": [ms…], "open": [ms…],
// "frames": [ms…], "phases": {…}}, …}; phases are the median times from
// navigation start of the steps before the list: the document's response,
// DOMContentLoaded, and the page's own marks where a build has them.
//
// Usage: CHROMIUM=/usr/bin/chromium node pageload.mjs SESSION_ID ROUNDS LABEL=URL [LABEL=URL…]
import { chromium } from "playwright-core";

const [sessionId, roundsArg, ...targets] = process.argv.slice(2);
const rounds = Number(roundsArg ?? 20);
const throttle = Number(process.env.WEBUI_BENCH_THROTTLE ?? 1);
const builds = targets.map((t) => {
  const i = t.indexOf("=");
  return { label: t.slice(0, i), url: t.slice(i + 1), load: [], open: [], frames: [], phases: {} };
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
    b.frames.push(
      ...(await page.evaluate(
        () =>
          new Promise((resolve) => {
            const scroller = document.querySelector(".scroller");
            const log = document.getElementById("history");
            const out = [];
            let last = performance.now();
            const step = (now) => {
              out.push(now - last);
              last = now;
              if (log.children.length >= 1000 || out.length > 20000) return resolve(out.slice(1));
              scroller.scrollTop = 0;
              requestAnimationFrame(step);
            };
            requestAnimationFrame(step);
          }),
      )),
    );
    if ((await page.locator("#history > li").count()) < 1000) throw new Error(`${b.label}: scrolling back did not reach 1,000 entries`);
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
  out[b.label] = { load: b.load, open: b.open, frames: b.frames, phases };
}
console.log(JSON.stringify(out));
