// Package typescript_test runs the client package's own tests from Go, so
// that `go test ./...` covers them: the node:test suite against the real
// binary over stdio and WebSocket, and the packed package installed into
// throwaway ESM, CommonJS and bundler projects that compile with tsc and
// make typed calls.
package typescript_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var binPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "bridge-ts-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "bridge")
	if out, err := exec.Command("go", "build", "-o", binPath, "../../cmd/bridge").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building bridge: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// run runs a command in dir and fails the test with its output when it fails.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s (in %s): %v\n%s", name, strings.Join(args, " "), dir, err, out)
	}
	return string(out)
}

// tsc is the repository's pinned TypeScript compiler.
func tsc(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("../../node_modules/typescript/bin/tsc")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("typescript is not installed (npm install at the repository root, or bash .ci/test): %v", err)
	}
	return p
}

// TestNodeSuite: the package's node:test suite (client over stdio and
// WebSocket against the real binary; the handoff parser).
func TestNodeSuite(t *testing.T) {
	tsc(t)
	run(t, ".", nil, "node", "build.mjs")
	out := run(t, ".", []string{"BRIDGE_BIN=" + binPath}, "node", "--experimental-websocket", "--test", "test/")
	if !strings.Contains(out, "# fail 0") || strings.Contains(out, "# pass 0") {
		t.Fatalf("node --test:\n%s", out)
	}
}

// consumer is a throwaway project that installs the packed package.
type consumer struct {
	name     string
	pkgType  string // package.json "type"
	tsconfig string
	source   string // index.ts (or .mts/.cts)
	file     string
	run      string // the compiled file to run with node; "" to type-check only
}

const typedCalls = `
  const init = await client.initialize();
  const name: string = init.serverInfo.name;
  const s = await client.request("session/create", { harness: "fake", cwd: dir, title: "pack" });
  const r = await client.request("session/prompt", { sessionId: s.sessionId, content: [{ type: "text", text: "say typed" }] });
  const stop: string = r.stopReason;
  const h = await client.request("session/history", { sessionId: s.sessionId, maxMessages: 10 });
  const n: number = h.entries.length;
  // @ts-expect-error sessionId is a string
  void (() => client.request("session/history", { sessionId: 42 }));
  // @ts-expect-error no such method
  void (() => client.request("session/nope", {}));
  const parsed = parseHandoff("## Goal\nx");
  await client.shutdown();
  console.log(JSON.stringify({ name, stop, n, problems: parsed.problems.length }));
`

// TestPackInstallCompile: npm pack, then install into ESM (nodenext),
// CommonJS (node16, and classic node10 resolution) and bundler projects; each compiles with tsc, and the
// two Node ones run typed calls against the real binary.
func TestPackInstallCompile(t *testing.T) {
	tscPath := tsc(t)
	packDir := t.TempDir()
	out := run(t, ".", nil, "npm", "pack", "--pack-destination", packDir, "--loglevel=error")
	lines := strings.Fields(strings.TrimSpace(out))
	tarball := filepath.Join(packDir, lines[len(lines)-1])
	if _, err := os.Stat(tarball); err != nil {
		t.Fatalf("npm pack printed %q: %v", out, err)
	}
	esmMain := `import { spawnBridge, parseHandoff } from "@bridge-dev/client";
import type { SessionHistoryResult } from "@bridge-dev/client";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
const dir = mkdtempSync(join(tmpdir(), "pack-esm-"));
const client = spawnBridge({ command: process.env.BRIDGE_BIN!, dataDir: dir });
const _h: SessionHistoryResult | undefined = undefined;
` + typedCalls
	cjsMain := `import { spawnBridge, parseHandoff } from "@bridge-dev/client";
import type { SessionHistoryResult } from "@bridge-dev/client";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
async function main() {
  const dir = mkdtempSync(join(tmpdir(), "pack-cjs-"));
  const client = spawnBridge({ command: process.env.BRIDGE_BIN!, dataDir: dir });
  const _h: SessionHistoryResult | undefined = undefined;
` + typedCalls + `
}
main().catch((e) => { console.error(e); process.exit(1); });
`
	base := `"strict": true, "target": "ES2022", "skipLibCheck": false, "types": ["node"], "outDir": "out"`
	for _, c := range []consumer{
		{name: "esm-nodenext", pkgType: "module", file: "index.ts", source: esmMain, run: "out/index.js",
			tsconfig: `{"compilerOptions": {"module": "nodenext", "moduleResolution": "nodenext", ` + base + `}}`},
		{name: "cjs-node16", pkgType: "commonjs", file: "index.ts", source: cjsMain, run: "out/index.js",
			tsconfig: `{"compilerOptions": {"module": "node16", "moduleResolution": "node16", ` + base + `}}`},
		{name: "cjs-node10", pkgType: "commonjs", file: "index.ts", source: cjsMain, run: "out/index.js",
			tsconfig: `{"compilerOptions": {"module": "commonjs", "moduleResolution": "node10", "esModuleInterop": true, ` + base + `}}`},
		{name: "bundler", pkgType: "module", file: "index.ts", source: esmMain,
			tsconfig: `{"compilerOptions": {"module": "esnext", "moduleResolution": "bundler", "noEmit": true, ` + base + `}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			write := func(name, text string) {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write("package.json", fmt.Sprintf(`{"name": "consumer-%s", "private": true, "type": %q}`, c.name, c.pkgType))
			write("tsconfig.json", c.tsconfig)
			write(c.file, c.source)
			run(t, dir, nil, "npm", "install", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error", tarball)
			// Node's own types, from the repository's pinned copy.
			nodeTypes, _ := filepath.Abs("../../node_modules/@types/node")
			if err := os.MkdirAll(filepath.Join(dir, "node_modules", "@types"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(nodeTypes, filepath.Join(dir, "node_modules", "@types", "node")); err != nil {
				t.Fatal(err)
			}
			run(t, dir, nil, "node", tscPath, "-p", ".")
			if c.run == "" {
				return
			}
			out := run(t, dir, []string{"BRIDGE_BIN=" + binPath}, "node", c.run)
			if !strings.Contains(out, `{"name":"bridge","stop":"end_turn"`) || !strings.Contains(out, `"problems":4`) {
				t.Fatalf("typed calls printed %q", out)
			}
		})
	}
}
