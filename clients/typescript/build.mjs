// build.mjs compiles src/ twice with tsc: dist/esm (ES modules) and
// dist/cjs (CommonJS, marked by its own package.json), each with its
// declarations and a copy of the generated contract.d.ts. typescript is
// resolved from the repository root's node_modules (package.json there pins
// it); `npm pack` runs this first (prepack).

import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, "..", "..", "package.json"));
const tsc = path.join(path.dirname(require.resolve("typescript/package.json")), "bin", "tsc");

rmSync(path.join(here, "dist"), { recursive: true, force: true });
for (const [config, out] of [
  ["tsconfig.json", "esm"],
  ["tsconfig.cjs.json", "cjs"],
]) {
  execFileSync(process.execPath, [tsc, "-p", path.join(here, config)], { stdio: "inherit" });
  const dir = path.join(here, "dist", out);
  mkdirSync(dir, { recursive: true });
  copyFileSync(path.join(here, "src", "contract.d.ts"), path.join(dir, "contract.d.ts"));
  if (out === "cjs") writeFileSync(path.join(dir, "package.json"), '{"type":"commonjs"}\n');
}
