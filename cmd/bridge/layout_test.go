package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const modulePath = "github.com/bridge-dev/bridge/"

// allowed is ARCHITECTURE.md's table "The parts" as an allowlist: what
// each package of the module may import besides the standard library.
// Every package must be listed (a new one fails until it is), and an
// import not listed for it fails. A package is named by its path in the
// module; "x/..." means x's subpackages (not x itself). Third-party imports
// are named by module path and cover the module's packages. "*" allows
// anything (only the binary, which wires everything).
var allowed = map[string]struct {
	may []string
	why string
}{
	"core":            {nil, "core knows no wire, no contract, no SQL and no harness: the standard library only"},
	"core/campaign":   {nil, "the size of the adversarial test campaign"},
	"core/jsonstream": {nil, "streaming a large JSON document"},
	"core/checkpoint": {[]string{"core"}, "the checkpoint algorithm is pure"},
	"core/handoff":    {[]string{"core", "core/checkpoint"}, "the migration algorithm is pure"},
	"core/inputfile":  {[]string{"core"}, "reading input files a user names"},
	"core/storetest":  {[]string{"core", "core/checkpoint"}, "the Store conformance suite knows only the port"},
	"core/testhome":   {nil, "isolating a test binary's home, for any package's tests"},

	"schema":          {[]string{"core", "core/checkpoint"}, "the contract is plain data types; entry payload types are core's"},
	"schema/validate": {[]string{"schema"}, "the contract's validator"},
	"schema/generate": {[]string{"schema", "core", "core/checkpoint", "github.com/invopop/jsonschema"}, "generation only"},
	"schema/gen":      {[]string{"schema/generate"}, "generation only"},

	"storage": {[]string{"core", "core/checkpoint", "storage/internal/record", "github.com/ncruces/go-sqlite3"},
		"storage is the SQLite Store"},
	"storage/internal/record": {[]string{"core", "core/checkpoint"},
		"what both stores do to the record without SQL: one copy, so they accept, index and walk it alike"},
	"storage/storagetest": {[]string{"core", "storage"}, "the SQLite store for other packages' tests"},
	"storage/postgres": {[]string{"core", "core/checkpoint", "storage/internal/record", "github.com/jackc/pgx/v5"},
		"storage/postgres is the PostgreSQL Store"},
	"storage/postgres/pgtest": {[]string{"github.com/jackc/pgx/v5"}, "a PostgreSQL database per test"},

	"rpc/peer": {[]string{"core", "schema"}, "the client as the service sees it: plain types the transports implement"},
	"rpc": {[]string{"core", "schema", "schema/validate", "rpc/peer", "go.lsp.dev/jsonrpc2"},
		"the transport calls its own interfaces (Backend, peer.Notifier), never the service's implementation"},
	"rpc/rpctest": {[]string{"schema"}, "the one test client speaks the contract, nothing of the server"},
	"rpc/web":     {[]string{"rpc", "github.com/coder/websocket"}, "bridge web's HTTP server runs rpc over a WebSocket"},
	"rpc/acp":     {[]string{"core", "core/handoff", "schema", "rpc", "rpc/peer", "rpc/service"}, "bridge acp: ACP into the same service"},
	"rpc/service": {[]string{"core", "core/...", "schema", "rpc/peer", "rpc/service/attach", "rpc/service/checkpointer", "rpc/service/controller",
		"rpc/service/hosts", "rpc/service/lease", "rpc/service/library", "rpc/service/live", "rpc/service/migrate", "rpc/service/queue",
		"rpc/service/sessions", "rpc/service/workspace"},
		"the service speaks the contract's data types but no transport, SQL or harness; its parts do the work"},
	"rpc/service/hosts":  {[]string{"core"}, "the adapters by harness and their probes"},
	"rpc/service/attach": {[]string{"core"}, "the images prompts carry, kept in the record"},
	"rpc/service/live":   {[]string{"core", "rpc/peer"}, "the running harness sessions: their events, turn, cancel and approvals"},
	"rpc/service/checkpointer": {[]string{"core", "core/checkpoint", "schema", "rpc/peer", "rpc/service/hosts"},
		"checkpoints: the live sessions it asks are the service's, through its own small interface"},
	"rpc/service/controller": {[]string{"core", "core/checkpoint", "rpc/peer", "rpc/service/checkpointer", "rpc/service/live"},
		"the checkpoint controller: when Bridge checkpoints on its own, suspension, compact; the service's flows through its own small interface"},
	"rpc/service/library": {[]string{"core", "core/checkpoint", "core/inputfile", "core/jsonstream", "schema", "rpc/peer", "rpc/service/attach"},
		"import, discovery, export, search and fork over the Store and the adapters' importers; a fork's live session through its own small interface"},
	"rpc/service/migrate": {[]string{"core", "core/handoff", "core/inputfile", "schema", "rpc/peer", "rpc/service/attach", "rpc/service/hosts",
		"rpc/service/library"}, "migration: the live sessions it drives are the service's, through its own small interface"},
	"rpc/service/sessions": {[]string{"core", "core/checkpoint", "schema", "rpc/peer", "rpc/service/attach", "rpc/service/checkpointer",
		"rpc/service/library", "rpc/service/live", "rpc/service/queue"}, "the session flows: create, prompt (queued or steered), cancel, archive, resume, models; the rest of the service through its own small interfaces"},
	"rpc/service/lease": {[]string{"core"}, "the leases of the sessions this process drives, against the Store"},
	"rpc/service/queue": {[]string{"core", "schema", "rpc/peer"}, "the prompt queues: a live session's turn through its own small interface"},
	"rpc/service/workspace": {[]string{"core", "core/inputfile", "schema"},
		"sessions' git worktrees and diffs: git plumbing over the Store, no live session"},
	"rpc/service/servicetest": {[]string{"core", "rpc/service", "schema", "storage/storagetest"},
		"the service over a real SQLite store, for other packages' tests and benchmarks"},

	"adapters/acp":                      {[]string{"core", "adapters/internal/..."}, "an adapter speaks its harness's protocol to core's port"},
	"adapters/acp/internal/scriptagent": {nil, "a scripted ACP agent for tests"},
	"adapters/claudecode": {[]string{"core", "core/inputfile", "adapters/internal/...", "github.com/go-json-experiment/json"},
		"an adapter speaks its harness's protocol to core's port"},
	"adapters/codex": {[]string{"core", "core/inputfile", "adapters/internal/..."}, "an adapter speaks its harness's protocol to core's port"},
	"adapters/dsh":   {[]string{"core", "core/inputfile", "adapters/internal/..."}, "an adapter speaks its harness's protocol to core's port"},
	"adapters/fake":  {[]string{"core", "core/inputfile", "core/handoff"}, "an adapter speaks its harness's protocol to core's port"},
	"adapters/opencode": {[]string{"core", "core/inputfile", "core/jsonstream", "adapters/internal/...", "github.com/ncruces/go-sqlite3"},
		"an adapter speaks its harness's protocol to core's port (OpenCode's own SQLite database included)"},
	"adapters/rpchost":            {[]string{"core", "schema", "go.lsp.dev/jsonrpc2"}, "a hosting client's sessions over the contract"},
	"adapters/rpchost/rpcwire":    {nil, "the hosting client's wire helpers"},
	"adapters/dsh/dshtest":        {[]string{"adapters/internal/procutil"}, "DeepSeek Harness for tests"},
	"adapters/fakemodel":          {nil, "the fake model server"},
	"adapters/adaptertest":        {[]string{"core"}, "the conformance suite drives adapters through core's port only"},
	"adapters/internal/findfiles": {nil, "the bounded file walk"},
	"adapters/internal/forkreply": {[]string{"core"}, "what the adapters' forks share"},
	"adapters/internal/ndjson":    {[]string{"adapters/internal/procutil"}, "one newline-delimited JSON-RPC connection"},
	"adapters/internal/pending":   {nil, "the requests an adapter awaits"},
	"adapters/internal/procutil":  {[]string{"core"}, "the one way a harness program is started"},
	"adapters/internal/zstd":      {nil, "a zstd decoder"},

	"clients/typescript": {nil, "the client package's tests"},
	"clients/webui":      {nil, "the WebUI's embedded files"},

	"cmd/bridge":                     {[]string{"*"}, "the binary wires everything"},
	"cmd/bridge/internal/bareopen":   {[]string{"storage"}, "a test helper process"},
	"cmd/bridge/internal/echoserver": {[]string{"go.lsp.dev/jsonrpc2"}, "a test helper process"},
	"cmd/bridge/internal/permclaude": {nil, "a test helper process"},
}

// importViolations holds every package of graph (module-relative path →
// its non-test imports, full paths) to allowed and returns what breaks it.
func importViolations(graph map[string][]string) []string {
	var out []string
	for pkg, imports := range graph {
		rule, ok := allowed[pkg]
		if !ok {
			out = append(out, fmt.Sprintf("%s is not in the allowlist: add it, with what it may import, as ARCHITECTURE.md's table says", pkg))
			continue
		}
		for _, imp := range imports {
			if !importAllowed(imp, rule.may) {
				out = append(out, fmt.Sprintf("%s imports %s: %s", pkg, imp, rule.why))
			}
		}
	}
	sort.Strings(out)
	return out
}

// importAllowed reports whether imp (a full import path) is the standard
// library or matches one of may.
func importAllowed(imp string, may []string) bool {
	first, _, _ := strings.Cut(imp, "/")
	internal := strings.HasPrefix(imp, modulePath)
	if !internal && !strings.Contains(first, ".") {
		return true // the standard library
	}
	in := strings.TrimPrefix(imp, modulePath)
	for _, m := range may {
		switch {
		case m == "*":
			return true
		case !internal:
			if imp == m || strings.HasPrefix(imp, m+"/") {
				return true
			}
		case strings.HasSuffix(m, "/..."):
			if strings.HasPrefix(in, strings.TrimSuffix(m, "...")) {
				return true
			}
		case in == m:
			return true
		}
	}
	return false
}

// TestPackagesImportWhatTheArchitectureAllows reads every package's
// non-test imports (`go list`) and holds them to the allowlist.
//
// To see it catch a violation, plant one: add
//
//	import _ "github.com/go-json-experiment/json/jsontext"
//
// to any file of core (the leak this test once missed, when it was a
// denylist), or make rpc import rpc/service; it fails naming the package,
// the import and the rule. TestAllowlistCatchesPlantedViolations does the
// same on a copy of the graph, so this stays true.
func TestPackagesImportWhatTheArchitectureAllows(t *testing.T) {
	graph := importGraph(t)
	if len(graph) < 40 {
		t.Fatalf("go list listed %d packages: is its output what this test expects?", len(graph))
	}
	for _, v := range importViolations(graph) {
		t.Error(v)
	}
}

// TestAllowlistCatchesPlantedViolations plants violations into the real
// import graph (core importing a third-party module, rpc importing the
// service, storage importing the wire, the contract importing the SQLite
// store, an unlisted package) and checks
// that each is reported.
func TestAllowlistCatchesPlantedViolations(t *testing.T) {
	graph := importGraph(t)
	plant := map[string]string{
		"core":    "github.com/go-json-experiment/json/jsontext",
		"rpc":     modulePath + "rpc/service",
		"storage": modulePath + "rpc",
		"schema":  modulePath + "storage",
		"rpc/web": "golang.org/x/term",
	}
	for pkg, imp := range plant {
		graph[pkg] = append(graph[pkg], imp)
	}
	graph["core/newthing"] = []string{"strings"}
	got := strings.Join(importViolations(graph), "\n")
	for pkg, imp := range plant {
		if !strings.Contains(got, pkg+" imports "+imp+":") {
			t.Errorf("planted %s → %s not reported; got:\n%s", pkg, imp, got)
		}
	}
	if !strings.Contains(got, "core/newthing is not in the allowlist") {
		t.Errorf("an unlisted package is not reported; got:\n%s", got)
	}
}

// importGraph lists every package of the module with its non-test
// imports, by module-relative path.
func importGraph(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	graph := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		graph[strings.TrimPrefix(f[0], modulePath)] = f[1:]
	}
	return graph
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

// TestArchitectureNamesFilesThatExist reads ARCHITECTURE.md's "What a
// change touches": each "### ... (N files)" list names N files (the first
// path in backquotes of each item), every path it names exists, and so do
// the generated files it lists. A file moved or renamed without the
// section fails here.
func TestArchitectureNamesFilesThatExist(t *testing.T) {
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## What a change touches\n")
	if !ok {
		t.Fatal(`ARCHITECTURE.md has no section "## What a change touches"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	heading := regexp.MustCompile(`^### (.+) \((\d+) files\)$`)
	quoted := regexp.MustCompile("`([^`]+)`")
	counted := map[string]int{}
	want := map[string]int{}
	var current string
	for _, line := range strings.Split(section, "\n") {
		if m := heading.FindStringSubmatch(line); m != nil {
			current = m[1]
			want[current], _ = strconv.Atoi(m[2])
			continue
		}
		isItem := strings.HasPrefix(line, "- ")
		if !isItem && !strings.HasPrefix(line, "Generated: ") {
			continue
		}
		for i, m := range quoted.FindAllStringSubmatch(line, -1) {
			p := m[1]
			if !strings.Contains(p, "/") || strings.ContainsAny(p, " <>()*") {
				continue // a Go name, not a path
			}
			if _, err := os.Stat(filepath.Join(root, p)); err != nil {
				t.Errorf("ARCHITECTURE.md, %q: %s does not exist", current, p)
			}
			if isItem && i == 0 {
				counted[current]++
			}
		}
	}
	for _, change := range []string{"A new request method", "A new entry kind", "A new harness", "A new store",
		"A new notification from Bridge"} {
		if _, ok := want[change]; !ok {
			t.Errorf("ARCHITECTURE.md's \"What a change touches\" has no %q", change)
			continue
		}
		if counted[change] != want[change] {
			t.Errorf("ARCHITECTURE.md, %q: the heading says %d files, the list names %d", change, want[change], counted[change])
		}
	}
}
