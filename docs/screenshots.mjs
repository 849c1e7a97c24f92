// Writes the WebUI screenshot README shows (docs/img/webui.png): builds the
// bridge binary, runs `bridge web` on a fresh data directory, and drives
// Debian's chromium with playwright-core through a fake session (a prompt
// with a tool call that completes a plan step, after which Bridge writes
// a phase-boundary checkpoint). Then it runs the WebUI's browser tests
// with SCREENSHOTS=1, which write the rest of docs/img at 1280 and 390 px
// wide from the flows they check: the session view (session-*.png), an
// approval from real Claude Code (approval-*), a tool card with an edit's
// diff (session-claude-*), search (search-*), the doctor (doctor-*) and
// context readings as bars (gauge-*).
// Run from the repository root after changing the WebUI:
// node docs/screenshots.mjs
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { chromium } from "playwright-core";

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
const tmp = mkdtempSync(path.join(tmpdir(), "bridge-screenshots-"));
const bin = path.join(tmp, "bridge");
execFileSync("go", ["build", "-o", bin, "./cmd/bridge"], { cwd: root, stdio: "inherit" });
const work = path.join(tmp, "work");
const web = spawn(bin, ["web", "--data-dir", path.join(tmp, "data"), "--listen", "127.0.0.1:0"], { stdio: ["ignore", "pipe", "inherit"] });
let browser;
try {
  const url = await new Promise((resolve, reject) => {
    let buf = "";
    web.stdout.setEncoding("utf8");
    web.stdout.on("data", (d) => {
      buf += d;
      const m = /^Bridge WebUI: (\S+)\n/.exec(buf);
      if (m) resolve(m[1]);
    });
    web.on("exit", (code) => reject(new Error(`bridge web exited ${code}`)));
  });
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? execFileSync("sh", ["-c", "command -v chromium"], { encoding: "utf8" }).trim(),
    args: ["--no-sandbox"],
  });
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  page.setDefaultTimeout(120_000);
  await page.goto(url);
  await page.locator("#new-harness").selectOption("fake");
  await page.locator("#new-cwd").fill(work);
  await page.locator("#new-title").fill("Tidy the config parser");
  await page.getByRole("button", { name: "Create" }).click();
  await page.waitForFunction(() => document.getElementById("session-title")?.textContent === "Tidy the config parser");
  await page
    .getByRole("textbox", { name: "Prompt text" })
    .fill(
      [
        "plan completed:read the parser; in_progress:split the key rules",
        "tool Read internal/config/parse.go",
        "say The parser mixes tokenizing and key rules in one 400-line function. I will split the key rules into rules.go and keep the public API unchanged.",
        'next json {"summary": "Parser read; splitting the key rules into rules.go next.", "decisions": ["keep the public API unchanged"]}',
      ].join("\n"),
    );
  await page.getByRole("button", { name: "Send", exact: true }).click();
  await page
    .getByRole("status", { name: "Session status" })
    .filter({ hasText: /Turn ended/ })
    .waitFor();
  await page.locator("#history .card-checkpoint").waitFor();
  await page.getByRole("textbox", { name: "Prompt text" }).fill("Also keep the error messages as they are.");
  // The conversation first, the checkpoint card below it.
  await page.locator("#history .kind-user-message").first().evaluate((el) => el.scrollIntoView({ block: "start" }));
  mkdirSync(path.join(root, "docs", "img"), { recursive: true });
  await page.screenshot({ path: path.join(root, "docs", "img", "webui.png") });
  console.log("wrote docs/img/webui.png");
} finally {
  await browser?.close();
  web.kill("SIGTERM");
  rmSync(tmp, { recursive: true, force: true });
}
execFileSync("go", ["test", "./clients/webui", "-run", "TestBrowser", "-count=1", "-timeout", "60m"], {
  cwd: root,
  stdio: "inherit",
  env: { ...process.env, SCREENSHOTS: "1" },
});
console.log("wrote docs/img/{session,session-claude,approval,search,doctor,gauge}-{1280,390}.png");
