// build.mjs bundles the WebUI with esbuild: src/main.ts (minified,
// ES2020, the client package's sources bundled in) is written as
// dist/app.js, and static/index.html, as dist/index.html, loads it with its
// SHA-256 in an integrity attribute; static/app.css is inlined into it, so
// that the page needs no request before it is styled; static/'s other files
// (favicon.png) are copied. The script is a file of its own, not inline,
// because Chromium compiles a script it loads off the page's main thread
// while the page is parsed (an inline module is compiled on the main
// thread, in the parser's task), and the main thread is what the session
// list waits for. bridge web allows the inline scripts and style by their
// hashes and app.js by the hash its integrity attribute holds (rpc/web),
// never 'self' for scripts nor 'unsafe-inline'. dist/ is committed and
// embedded in the binary (embed.go); `go test ./clients/webui` fails when
// it is not what this script builds. esbuild is resolved from the
// repository root's node_modules (package.json there pins it).
//
// Usage: node clients/webui/build.mjs [OUTDIR]

import { createHash } from "node:crypto";
import { copyFileSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, "..", "..", "package.json"));
const esbuild = require("esbuild");
const out = path.resolve(process.argv[2] ?? path.join(here, "dist"));

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const js = await esbuild.build({
  entryPoints: [path.join(here, "src", "main.ts")],
  bundle: true,
  format: "esm",
  target: "es2020",
  platform: "browser",
  minify: true,
  legalComments: "none",
  charset: "utf8",
  write: false,
  outfile: "app.js",
  logLevel: "warning",
});
const css = await esbuild.build({
  entryPoints: [path.join(here, "static", "app.css")],
  bundle: true,
  minify: true,
  legalComments: "none",
  charset: "utf8",
  write: false,
  outfile: "app.css",
  logLevel: "warning",
});
const script = js.outputFiles[0].text.trimEnd();
const style = css.outputFiles[0].text.trimEnd();
// Inline text must not end its element early (this makes sure).
if (/<\/style/i.test(style)) throw new Error("the stylesheet holds </style: it cannot be inlined");
const page = readFileSync(path.join(here, "static", "index.html"), "utf8");
const link = '<link rel="stylesheet" href="app.css">';
const tag = '<script type="module" src="app.js"></script>';
if (!page.includes(link) || !page.includes(tag)) throw new Error(`static/index.html must hold ${link} and ${tag}`);
// Replaced by functions: a replacement string would expand "$&" and friends.
const integrity = `sha256-${createHash("sha256").update(script).digest("base64")}`;
const html = page.replace(link, () => `<style>${style}</style>`).replace(tag, () => `<script type="module" src="app.js" integrity="${integrity}"></script>`);
writeFileSync(path.join(out, "app.js"), script);
writeFileSync(path.join(out, "index.html"), html);
for (const f of readdirSync(path.join(here, "static"))) {
  if (f !== "index.html" && f !== "app.css") copyFileSync(path.join(here, "static", f), path.join(out, f));
}
