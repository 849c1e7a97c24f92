// loadMarkdown bundles src/markdown.ts with esbuild (as build.mjs does the
// page) into a temporary module and imports it, so that Node can run the
// parser, which needs no DOM.
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const esbuild = createRequire(path.join(here, "..", "..", "..", "package.json"))("esbuild");

export async function loadMarkdown() {
  const dir = mkdtempSync(path.join(tmpdir(), "bridge-webui-md-"));
  try {
    const outfile = path.join(dir, "markdown.mjs");
    await esbuild.build({
      entryPoints: [path.join(here, "..", "src", "markdown.ts")],
      bundle: true,
      format: "esm",
      target: "es2020",
      platform: "neutral",
      outfile,
      logLevel: "warning",
    });
    return await import(pathToFileURL(outfile).href);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * hostile are inputs that made backtracking renderers slow, each a unit
 * that is repeated: unclosed links, images and emphasis, backtick runs of
 * growing length, URLs that are not, nested quotes.
 */
export const hostile = {
  "unclosed link [a](": "[a](",
  "unclosed image ![a](": "![a](",
  "link text without ] [a": "[a",
  "open * emphasis": "*a ",
  "open ** strong": "**a ",
  "open _ emphasis": "_a ",
  "snake_case words": "a_b ",
  "mixed **_[`": "**_[`a",
  "backtick runs": "`a``b",
  "broken URLs http://[": "http://[",
  "escapes \\*": "\\*a*",
  "nested quotes >": ">",
  "list items": "- a\n",
};
