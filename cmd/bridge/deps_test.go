package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryLinksOnlyWhatItRuns reads the module list of the built binary
// (`go version -m`): the JSON Schema generator and YAML libraries are for
// `go generate ./schema` only and must not be linked into bridge, and the
// complete JSON Schema validator is for tests only (its package init
// compiles every draft's meta-schema: a quarter of bridge's startup).
func TestBinaryLinksOnlyWhatItRuns(t *testing.T) {
	out, err := exec.Command("go", "version", "-m", binPath).CombinedOutput()
	if err != nil {
		t.Fatalf("go version -m: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "github.com/ncruces/go-sqlite3") {
		t.Fatalf("go version -m lists no dependencies of the binary:\n%s", out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "dep" {
			continue
		}
		for _, banned := range []string{"invopop/jsonschema", "yaml", "ordered-map", "wk8/", "santhosh-tekuri/jsonschema"} {
			if strings.Contains(f[1], banned) {
				t.Errorf("the binary links %s (generation or tests only)", f[1])
			}
		}
	}
}
