package main

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestBinaryLinksOnlyWhatItRuns reads the module list of the built binary
// (`go version -m`): the JSON Schema generator and YAML libraries are for
// `go generate ./schema` only and must not be linked into bridge, and the
// complete JSON Schema validator is for tests only (its package init
// compiles every draft's meta-schema: a quarter of bridge's startup), and
// so is klauspost/compress (its zstd package's init builds a CRC table before
// main on every start; DeepSeek Harness logs are read with
// adapters/internal/zstd), and so is oklog/ulid (core makes its own ULIDs;
// the library's init seeded a math/rand source before main).
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
		for _, banned := range []string{"invopop/jsonschema", "yaml", "ordered-map", "wk8/", "santhosh-tekuri/jsonschema", "klauspost/compress", "oklog/ulid"} {
			if strings.Contains(f[1], banned) {
				t.Errorf("the binary links %s (generation or tests only)", f[1])
			}
		}
	}
}

// TestPackageInitsAllocateLittle: what runs before main is paid by every
// `bridge` start, so no package may build large tables or compile schemas
// in its init (the JSON Schema library that did took a quarter of the
// startup). It reads the runtime's own report of each package init
// (GODEBUG=inittrace=1) and checks bytes allocated, not time.
func TestPackageInitsAllocateLittle(t *testing.T) {
	cmd := exec.Command(binPath, "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bridge version: %v\n%s", err, out)
	}
	const perPackage, total = 64 << 10, 512 << 10
	sum, n := 0, 0
	for _, line := range strings.Split(string(out), "\n") {
		// init github.com/x/y @1.2 ms, 0.1 ms clock, 9216 bytes, 3 allocs
		f := strings.Fields(line)
		if len(f) < 10 || f[0] != "init" || f[8] != "bytes," {
			continue
		}
		b, err := strconv.Atoi(f[7])
		if err != nil {
			t.Fatalf("unreadable inittrace line %q", line)
		}
		n++
		sum += b
		if b > perPackage {
			t.Errorf("package %s allocates %d bytes in its init (at most %d): make that work lazy", f[1], b, perPackage)
		}
	}
	if n < 20 {
		t.Fatalf("only %d package inits reported:\n%s", n, out)
	}
	if sum > total {
		t.Errorf("package inits allocate %d bytes in all (at most %d)", sum, total)
	}
}
