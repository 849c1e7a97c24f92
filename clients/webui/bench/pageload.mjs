// pageload.mjs measures the WebUI in Chromium with its performance marks:
// page load to the session list shown (bridge:sessions-shown, from
// navigation start), and opening a session to its newest page shown
// (bridge:open-start → bridge:newest-shown). Run by BenchmarkWebUI
// (clients/webui/bench_test.go), which seeds the session and starts
// bridge web. Prints one JSON object: {"load": [ms…], "open": [ms…]}.
//
// Usage: CHROMIUM=/usr/bin/chromium node pageload.mjs URL SESSION_ID ROUNDS
import { chromium } from "playwright-core";

const [url, sessionId, roundsArg] = process.argv.slice(2);
const rounds = Number(roundsArg ?? 20);
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM, args: ["--no-sandbox"] });
const load = [];
const open = [];
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
    await page.close();
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify({ load, open }));
