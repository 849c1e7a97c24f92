// pageload.mjs measures the WebUI in Chromium with its performance marks:
// page load to the session list shown (bridge:sessions-shown, from
// navigation start), and opening a session to its newest page shown
// (bridge:open-start → bridge:newest-shown), and, in the first rounds,
// scrolling 1,000 entries back: the history is scrolled to its top on
// every frame (older pages load as it nears the top) until 1,000 entries
// are shown, and the time between frames is kept. Run by BenchmarkWebUI
// (clients/webui/bench_test.go), which seeds the session and starts
// bridge web. Prints one JSON object: {"load": [ms…], "open": [ms…],
// "frames": [ms…]}.
//
// Usage: CHROMIUM=/usr/bin/chromium node pageload.mjs URL SESSION_ID ROUNDS
import { chromium } from "playwright-core";

const [url, sessionId, roundsArg] = process.argv.slice(2);
const rounds = Number(roundsArg ?? 20);
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM, args: ["--no-sandbox"] });
const load = [];
const open = [];
const frames = [];
try {
  for (let i = 0; i < rounds; i++) {
    const page = await browser.newPage();
    await page.goto(url);
    await page.waitForFunction(() => performance.getEntriesByName("bridge:sessions-shown").length > 0);
    load.push(await page.evaluate(() => performance.getEntriesByName("bridge:sessions-shown")[0].startTime));
    await page.locator(`#session-list li[data-session="${sessionId}"] button.open`).click();
    await page.waitForFunction(() => performance.getEntriesByName("bridge:newest-shown").length > 0);
    open.push(
      await page.evaluate(
        () => performance.getEntriesByName("bridge:newest-shown")[0].startTime - performance.getEntriesByName("bridge:open-start")[0].startTime,
      ),
    );
    const shown = await page.locator("#history li").count();
    if (shown === 0) throw new Error("the newest page showed no entries");
    if (i < 5) {
      frames.push(
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
      if ((await page.locator("#history > li").count()) < 1000) throw new Error("scrolling back did not reach 1,000 entries");
    }
    await page.close();
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify({ load, open, frames }));
