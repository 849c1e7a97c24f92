// build.mjs bundles the WebUI with esbuild: src/main.ts → dist/app.js
// (minified, ES2020, the client package's sources bundled in), and copies
// static/ (index.html, app.css) into dist/. dist/ is committed and embedded
// in the binary (embed.go); `go test ./clients/webui` fails when it is not
// what this script builds. esbuild is resolved from the repository root's
// node_modules (package.json there pins it).
//
// Usage: node clients/webui/build.mjs [OUTDIR]

import { copyFileSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, "..", "..", "package.json"));
const esbuild = require("esbuild");
const out = path.resolve(process.argv[2] ?? path.join(here, "dist"));

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
await esbuild.build({
  entryPoints: [path.join(here, "src", "main.ts")],
  bundle: true,
  format: "esm",
  target: "es2020",
  platform: "browser",
  minify: true,
  legalComments: "none",
  charset: "utf8",
  outfile: path.join(out, "app.js"),
  logLevel: "warning",
});
for (const f of readdirSync(path.join(here, "static"))) copyFileSync(path.join(here, "static", f), path.join(out, f));
