package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const modulePath = "github.com/bridge-dev/bridge/"

// layerRules are the import rules ARCHITECTURE.md's table states, as what a
// package (by path prefix, within the module) must not import. The first
// matching rule applies.
var layerRules = []struct {
	pkg, why string
	deny     []string
}{
	{"rpc/service", "the service speaks the contract's data types but no transport, SQL or harness",
		[]string{"rpc/web", "storage", "adapters", "cmd", "schema/validate", "schema/generate",
			"go.lsp.dev/", "github.com/ncruces/", "github.com/coder/"}},
	{"core", "core knows no wire, no SQL and no harness",
		[]string{"rpc", "storage", "adapters", "schema", "cmd",
			"go.lsp.dev/", "github.com/ncruces/", "github.com/coder/", "github.com/klauspost/"}},
	{"storage", "storage is the SQLite Store: it knows core, not the wire or the harnesses",
		[]string{"rpc", "adapters", "schema", "cmd", "go.lsp.dev/", "github.com/coder/"}},
	{"adapters/adaptertest", "the conformance suite drives adapters through the service",
		[]string{"rpc/web", "cmd", "github.com/coder/"}},
	{"adapters", "an adapter speaks its harness's protocol to core's port",
		[]string{"rpc", "storage", "cmd", "github.com/coder/"}},
	{"rpc", "the wire layer dispatches to the service; it never touches SQL or a harness",
		[]string{"storage", "adapters", "cmd", "github.com/ncruces/"}},
	{"schema/validate", "the contract's validator", []string{"core", "rpc", "storage", "adapters", "cmd"}},
	{"schema/generate", "generation only", []string{"core", "rpc", "storage", "adapters", "cmd"}},
	{"schema/gen", "generation only", []string{"core", "rpc", "storage", "adapters", "cmd"}},
	{"schema", "the contract is plain data types",
		[]string{"core", "rpc", "storage", "adapters", "cmd", "github.com/", "go.lsp.dev/"}},
}

// TestPackagesImportWhatTheArchitectureAllows reads every package's
// non-test imports (`go list`) and holds them to the layering rules.
func TestPackagesImportWhatTheArchitectureAllows(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(f[0], modulePath)
		for _, r := range layerRules {
			if pkg != r.pkg && !strings.HasPrefix(pkg, r.pkg+"/") {
				continue
			}
			checked++
			for _, imp := range f[1:] {
				in := strings.TrimPrefix(imp, modulePath)
				for _, d := range r.deny {
					internal := strings.HasPrefix(imp, modulePath)
					hit := internal && (in == d || strings.HasPrefix(in, d+"/")) ||
						!internal && strings.HasSuffix(d, "/") && strings.HasPrefix(imp, d)
					if hit {
						t.Errorf("%s imports %s: %s", pkg, imp, r.why)
					}
				}
			}
			break
		}
	}
	if checked < 20 {
		t.Fatalf("only %d packages matched a rule: is go list's output what this test expects?\n%s", checked, out)
	}
}

// TestRepositoryLayout: the top-level folders are the fixed set, and no
// built binary is committed.
func TestRepositoryLayout(t *testing.T) {
	root := filepath.Join("..", "..")
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	fixed := map[string]bool{"cmd": true, "rpc": true, "core": true, "adapters": true, "storage": true,
		"schema": true, "clients": true, "testdata": true, "docs": true}
	files := strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	for _, f := range files {
		if top, _, nested := strings.Cut(f, "/"); nested && !fixed[top] && !strings.HasPrefix(top, ".") {
			t.Errorf("%s: the top-level folders are cmd rpc core adapters storage schema clients testdata docs", f)
		}
		fh, err := os.Open(filepath.Join(root, f))
		if err != nil {
			continue // deleted in the work tree
		}
		head := make([]byte, 4)
		n, _ := fh.Read(head)
		fh.Close()
		if bytes.Equal(head[:n], []byte("\x7fELF")) {
			t.Errorf("%s is a committed executable", f)
		}
	}
	if len(files) < 100 {
		t.Fatalf("git ls-files listed %d files", len(files))
	}
}
