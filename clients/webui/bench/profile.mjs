// profile.mjs records a DevTools trace of scrolling 1,000 entries back
// (as pageload.mjs scrolls) and prints where the renderer's main thread
// spent its CPU time: script, style, layout, paint and the rest, summed
// over the scroll by thread time (tdur), which the machine's load inflates
// far less than wall time. Prints one JSON object
// {"frames", "tasksCpuMs", "taskCpuP95", "taskCpuMax", "tasksOver16ms",
// "frameCpuP50", "frameCpuP95", "frameCpuMax", "frameWallP95", "framesTraced",
// "cpuMs": {"script", "style", "layout", "paint"}}: frameCpu… is the work
// per frame (the main thread's tasks from one animation frame to the next,
// in thread time), the figure to hold against 16 ms per frame, since the
// time between frames is a multiple of the display's 16.7 ms. Run by
// BenchmarkWebUIScrollCPU. To try a change without rebuilding bridge:
// PROFILE_CSS adds a style sheet (the page's CSP bypassed), PROFILE_HTML
// serves another index.html, the script and style sheet inlined (node
// build.mjs OUTDIR; the CSP bypassed, as its hashes are the binary's).
//
// Usage: CHROMIUM=/usr/bin/chromium node profile.mjs URL SESSION_ID
import { chromium } from "playwright-core";

const [url, sessionId] = process.argv.slice(2);
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM, args: ["--no-sandbox"] });
try {
  const css = process.env.PROFILE_CSS;
  const html = process.env.PROFILE_HTML;
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 }, bypassCSP: Boolean(css || html) });
  // PROFILE_HTML serves another page (a build of the WebUI not yet in the binary).
  if (html) {
    const { readFileSync } = await import("node:fs");
    const body = readFileSync(html, "utf8");
    await page.route((u) => u.pathname === "/", (r) => r.fulfill({ body, contentType: "text/html; charset=utf-8" }));
  }
  await page.goto(url);
  if (css) await page.addStyleTag({ content: css });
  await page.locator(`#session-list li[data-session="${sessionId}"] button.open`).click();
  await page.waitForFunction(() => performance.getEntriesByName("bridge:newest-shown").length > 0, null, { timeout: 120_000 });
  await browser.startTracing(page, { categories: ["devtools.timeline", "disabled-by-default-devtools.timeline"] });
  const frames = await page.evaluate(
    () =>
      new Promise((resolve) => {
        const scroller = document.querySelector(".scroller");
        const log = document.getElementById("history");
        let n = 0;
        const step = () => {
          n++;
          // Rows are virtualized: data-loaded counts the entries received, data-first="0" says the oldest is shown.
          const loaded = Number(log.dataset.loaded ?? log.children.length);
          if ((loaded >= 1000 && (log.dataset.first ?? "0") === "0") || n > 20000) return resolve(n);
          scroller.scrollTop = 0;
          requestAnimationFrame(step);
        };
        requestAnimationFrame(step);
      }),
  );
  const trace = JSON.parse((await browser.stopTracing()).toString());
  const events = trace.traceEvents ?? trace;
  // The renderer main thread: the one with the page's FunctionCall/Layout events.
  const counts = new Map();
  for (const e of events) if (e.name === "Layout") counts.set(`${e.pid}:${e.tid}`, (counts.get(`${e.pid}:${e.tid}`) ?? 0) + 1);
  const main = [...counts.entries()].sort((a, b) => b[1] - a[1])[0]?.[0];
  const groups = {
    script: ["FunctionCall", "EvaluateScript", "TimerFire", "FireAnimationFrame", "EventDispatch", "v8.run", "RunMicrotasks"],
    style: ["UpdateLayoutTree", "RecalculateStyles", "ScheduleStyleRecalculation"],
    layout: ["Layout", "UpdateLayerTree", "PrePaint", "Layerize"],
    paint: ["Paint", "PaintImage", "CompositeLayers"],
    parse: ["ParseHTML", "ParseAuthorStyleSheet"],
  };
  const top = (name) => Object.entries(groups).find(([, names]) => names.includes(name))?.[0];
  const cpu = {};
  let total = 0;
  // Sum only outermost events of each group (events nest: a FunctionCall holds a forced Layout).
  const open = [];
  const own = events.filter((e) => `${e.pid}:${e.tid}` === main && e.ph === "X" && typeof e.tdur === "number").sort((a, b) => a.ts - b.ts);
  const tasks = [];
  for (const e of own) {
    while (open.length && open.at(-1).ts + open.at(-1).dur <= e.ts) open.pop();
    const g = top(e.name);
    if (e.name === "RunTask" && open.length === 0) {
      total += e.tdur / 1000;
      tasks.push(e.tdur / 1000);
    }
    if (g) {
      // A forced layout inside script counts as layout, and not again as script.
      const inner = open.filter((o) => top(o.name));
      if (inner.length === 0) cpu[g] = (cpu[g] ?? 0) + e.tdur / 1000;
      else if (inner.at(-1) && top(inner.at(-1).name) !== g) {
        const outer = top(inner.at(-1).name);
        cpu[g] = (cpu[g] ?? 0) + e.tdur / 1000;
        cpu[outer] = (cpu[outer] ?? 0) - e.tdur / 1000;
      }
    }
    open.push(e);
  }
  // Work per frame: the main thread's tasks from one animation frame's task
  // (the one that runs the page's requestAnimationFrame callback, then
  // style, layout and paint) to the next, summed, in thread time and in
  // wall time. Unlike the time between frames, this is not a multiple of
  // the display's 16.7 ms: it says how much of a frame the page used.
  const rafs = own.filter((e) => e.name === "FireAnimationFrame").map((e) => e.ts);
  const topTasks = own.filter((e) => e.name === "RunTask").sort((a, b) => a.ts - b.ts);
  const frameWork = [];
  const frameWall = [];
  let fi = -1;
  for (const t of topTasks) {
    // a task holding a FireAnimationFrame starts a frame
    const starts = rafs.some((r) => r >= t.ts && r < t.ts + t.dur);
    if (starts) {
      fi++;
      frameWork[fi] = 0;
      frameWall[fi] = 0;
    }
    if (fi < 0) continue;
    frameWork[fi] += t.tdur / 1000;
    frameWall[fi] += t.dur / 1000;
  }
  const fq = (xs, p) => {
    const s = [...xs].sort((a, b) => a - b);
    return s.length ? Math.round(s[Math.min(s.length - 1, Math.floor(p * s.length))] * 10) / 10 : 0;
  };
  for (const k of Object.keys(cpu)) cpu[k] = Math.round(cpu[k]);
  tasks.sort((a, b) => a - b);
  const q = (p) => Math.round(tasks[Math.min(tasks.length - 1, Math.floor(p * tasks.length))] * 10) / 10;
  const over16 = tasks.filter((t) => t > 16).length;
  console.log(
    JSON.stringify({
      frames,
      tasksCpuMs: Math.round(total),
      taskCpuP95: q(0.95),
      taskCpuMax: q(1),
      tasksOver16ms: over16,
      frameCpuP50: fq(frameWork, 0.5),
      frameCpuP95: fq(frameWork, 0.95),
      frameCpuMax: fq(frameWork, 1),
      frameWallP95: fq(frameWall, 0.95),
      framesTraced: frameWork.length,
      cpuMs: cpu,
    }),
  );
} finally {
  await browser.close();
}
