package schema_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/schema"
	"github.com/bridge-dev/bridge/schema/generate"
)

const fixCommand = "go generate ./schema"

// generateAll writes the JSON Schema files and the TypeScript declarations
// into a fresh directory, exactly as `go generate ./schema` does, and
// returns the two output directories.
func generateAll(t *testing.T) (jsonDir, tsDir string) {
	t.Helper()
	tmp := t.TempDir()
	jsonDir = filepath.Join(tmp, "json")
	tsDir = filepath.Join(tmp, "ts")
	if err := generate.Generate(jsonDir); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is needed to generate the TypeScript contract and was not found on PATH: %v", err)
	}
	cmd := exec.Command(node, filepath.Join("..", "clients", "typescript", "gen.mjs"),
		filepath.Join(jsonDir, schema.BundleFile), filepath.Join(tsDir, "contract.d.ts"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("clients/typescript/gen.mjs failed (is json-schema-to-typescript installed in the repository's node_modules? `bash .ci/test` installs it): %v\n%s", err, out)
	}
	return jsonDir, tsDir
}

func TestGeneratedFilesAreFresh(t *testing.T) {
	t.Parallel()
	jsonDir, tsDir := generateAll(t)
	compareDirs(t, filepath.Join("json"), jsonDir)
	// clients/typescript/src also holds the client package's hand-written
	// sources: compare only the generated files (marked so on line 1).
	compareDirs(t, filepath.Join("..", "clients", "typescript", "src"), tsDir, markedGenerated)
}

// markedGenerated keeps the files whose first line says they are generated.
func markedGenerated(t *testing.T, dir string, names []string) []string {
	t.Helper()
	var out []string
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		first, _, _ := strings.Cut(string(b), "\n")
		if strings.Contains(first, "Code generated") && strings.Contains(first, "DO NOT EDIT") {
			out = append(out, n)
		}
	}
	return out
}

func listFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatalf("read %s: %v", dir, err)
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

// compareDirs fails when committed differs from generated; keep, when
// given, narrows the committed files compared.
func compareDirs(t *testing.T, committed, generated string, keep ...func(*testing.T, string, []string) []string) {
	t.Helper()
	have, want := listFiles(t, committed), listFiles(t, generated)
	for _, k := range keep {
		have = k(t, committed, have)
	}
	if strings.Join(have, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s is stale: its files differ from a fresh generation\n%s\nfix: %s",
			committed, diffLines(committed, "generated", strings.Join(have, "\n"), strings.Join(want, "\n")), fixCommand)
		return
	}
	for _, name := range want {
		a, err := os.ReadFile(filepath.Join(committed, name))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(generated, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s is stale\n%s\nfix: %s", filepath.Join(committed, name),
				diffLines(filepath.Join(committed, name), "generated/"+name, string(a), string(b)), fixCommand)
		}
	}
}

// diffLines renders the first differing lines of a and b in unified style,
// with two lines of context, at most ten changed lines.
func diffLines(nameA, nameB, a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	first := 0
	for first < len(la) && first < len(lb) && la[first] == lb[first] {
		first++
	}
	// Find where the two texts agree again, from the end.
	ea, eb := len(la), len(lb)
	for ea > first && eb > first && la[ea-1] == lb[eb-1] {
		ea--
		eb--
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "--- %s\n+++ %s\n", nameA, nameB)
	start := max(first-2, 0)
	fmt.Fprintf(&sb, "@@ -%d +%d @@\n", start+1, start+1)
	for i := start; i < first; i++ {
		fmt.Fprintf(&sb, " %s\n", la[i])
	}
	const limit = 10
	for i := first; i < ea && i < first+limit; i++ {
		fmt.Fprintf(&sb, "-%s\n", la[i])
	}
	if ea-first > limit {
		fmt.Fprintf(&sb, "-… %d more lines\n", ea-first-limit)
	}
	for i := first; i < eb && i < first+limit; i++ {
		fmt.Fprintf(&sb, "+%s\n", lb[i])
	}
	if eb-first > limit {
		fmt.Fprintf(&sb, "+… %d more lines\n", eb-first-limit)
	}
	return sb.String()
}

func TestDiffLinesShowsTheChange(t *testing.T) {
	got := diffLines("a", "b", "x\ny\nz\nw", "x\ny\nQ\nw")
	want := "--- a\n+++ b\n@@ -1 +1 @@\n x\n y\n-z\n+Q\n"
	if got != want {
		t.Errorf("diffLines:\n%s\nwant:\n%s", got, want)
	}
}

// TestSchemaFileRules checks what every generated file promises: draft
// 2020-12, the generated banner, a titled root, additional properties never
// forbidden, and stable formatting (sorted keys, trailing newline).
func TestSchemaFileRules(t *testing.T) {
	files, err := generate.Files()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < len(schema.Methods()) {
		t.Fatalf("only %d files for %d methods", len(files), len(schema.Methods()))
	}
	for name, b := range files {
		var root map[string]any
		if err := json.Unmarshal(b, &root); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if root["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
			t.Errorf("%s: $schema = %v", name, root["$schema"])
		}
		if root["$comment"] != "Code generated by schema/gen. DO NOT EDIT." {
			t.Errorf("%s: $comment = %v", name, root["$comment"])
		}
		if s, _ := root["title"].(string); s == "" {
			t.Errorf("%s: root has no title", name)
		}
		if defs, ok := root["$defs"].(map[string]any); ok {
			for dn, d := range defs {
				if d.(map[string]any)["title"] != dn {
					t.Errorf("%s: definition %s has title %v", name, dn, d.(map[string]any)["title"])
				}
			}
		}
		walk(root, func(m map[string]any) {
			if ap, ok := m["additionalProperties"]; ok && ap == false {
				t.Errorf("%s: additionalProperties:false is emitted", name)
			}
		})
		if !bytes.HasSuffix(b, []byte("}\n")) {
			t.Errorf("%s: no trailing newline", name)
		}
		// Re-encoding with sorted keys must give the same bytes.
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		var generic any
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if err := dec.Decode(&generic); err != nil {
			t.Fatal(err)
		}
		if err := enc.Encode(generic); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), b) {
			t.Errorf("%s: keys are not sorted or formatting is not canonical", name)
		}
	}
	again, err := generate.Files()
	if err != nil {
		t.Fatal(err)
	}
	for name := range files {
		if !bytes.Equal(files[name], again[name]) {
			t.Errorf("%s: two generations differ", name)
		}
	}
}

func walk(v any, f func(map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		f(x)
		for _, e := range x {
			walk(e, f)
		}
	case []any:
		for _, e := range x {
			walk(e, f)
		}
	}
}

func TestWriteBundleIsTheCommittedBundle(t *testing.T) {
	var buf bytes.Buffer
	if err := schema.WriteBundle(&buf); err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile(filepath.Join("json", schema.BundleFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), committed) {
		t.Errorf("WriteBundle differs from json/%s; fix: %s", schema.BundleFile, fixCommand)
	}
	var bundle struct {
		Defs    map[string]json.RawMessage `json:"$defs"`
		Methods []struct {
			Name, Direction, Kind, Params, Result string
		} `json:"x-bridge-methods"`
	}
	if err := json.Unmarshal(buf.Bytes(), &bundle); err != nil {
		t.Fatal(err)
	}
	if len(bundle.Methods) != len(schema.Methods()) {
		t.Fatalf("bundle lists %d methods, table has %d", len(bundle.Methods), len(schema.Methods()))
	}
	for i, m := range bundle.Methods {
		if m.Name != schema.Methods()[i].Name {
			t.Errorf("bundle method %d is %s, table has %s", i, m.Name, schema.Methods()[i].Name)
		}
		for _, ref := range []string{m.Params, m.Result} {
			if _, ok := bundle.Defs[ref]; ref != "" && !ok {
				t.Errorf("%s names %s, which the bundle does not define", m.Name, ref)
			}
		}
	}
}

// TestTypeScriptDeclaresTheContract checks the generated declarations for
// what clients use: the banner, the tagged union, and the method map.
func TestTypeScriptDeclaresTheContract(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "clients", "typescript", "src", "contract.d.ts"))
	if err != nil {
		t.Fatal(err)
	}
	ts := string(b)
	for _, want := range []string{
		"// Code generated by clients/typescript/gen.mjs from schema/json/bridge.schema.json. DO NOT EDIT.\n",
		"export type Content = TextContent | ImageContent;",
		`type: "text"`,
		`export type RestoreMode = "hot" | "native" | "checkpoint_restored" | "fresh";`,
		"export interface BridgeMethods {",
		`"session/resume": { direction: "clientToServer"; params: SessionResumeParams; result: SessionResumeResult };`,
		`"host/session.history": { direction: "serverToClient"; params: HostSessionHistoryParams; result: HostSessionHistoryResult };`,
		"export interface BridgeNotifications {",
		`"session/contextCompacted": { direction: "serverToClient"; params: ContextCompactedNotification };`,
	} {
		if !strings.Contains(squeeze(ts), squeeze(want)) {
			t.Errorf("contract.d.ts lacks %q", want)
		}
	}
	if !strings.HasPrefix(ts, "// Code generated") {
		t.Error("banner is not the first line")
	}
	// One declaration per type: no numbered copies.
	for _, line := range strings.Split(ts, "\n") {
		if strings.HasPrefix(line, "export ") {
			f := strings.Fields(line)
			if len(f) > 2 && strings.TrimRight(f[2], "0123456789") != f[2] {
				t.Errorf("numbered duplicate declaration: %s", line)
			}
		}
	}
}

// squeeze drops whitespace and the semicolon before a closing brace, so
// that a formatter's line wrapping does not matter.
func squeeze(s string) string {
	s = strings.Join(strings.Fields(s), "")
	return strings.ReplaceAll(s, ";}", "}")
}

// TestProtocolDocListsEveryMethod: docs/protocol.md's method table is the
// one go generate writes from schema.Methods, so it names every method of
// the contract and no other.
func TestProtocolDocListsEveryMethod(t *testing.T) {
	path := filepath.Join("..", "docs", "protocol.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := generate.SpliceMethods(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if want != string(b) {
		t.Fatalf("%s: the method table is stale; run go generate ./schema", path)
	}
	for _, m := range schema.Methods() {
		if !strings.Contains(string(b), "| `"+m.Name+"` |") {
			t.Errorf("%s does not list %s", path, m.Name)
		}
	}
}
