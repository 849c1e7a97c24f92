package rpc

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestInteropNode drives a server binary with the vscode-jsonrpc 8.2.1
// client (clients/interop/interop.mjs). The binary is $BRIDGE_BIN when set
// (with the space-separated arguments in $BRIDGE_BIN_ARGS, and a fresh
// BRIDGE_DATA_DIR), else the real binary built from cmd/bridge, driving the
// scripted fake harness.
// A missing node fails the test.
func TestInteropNode(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is required for the interop test: %v", err)
	}
	bin, args := os.Getenv("BRIDGE_BIN"), strings.Fields(os.Getenv("BRIDGE_BIN_ARGS"))
	if bin == "" {
		bin, args = filepath.Join(t.TempDir(), "bridge"), []string{"serve"}
		build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "../cmd/bridge")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building bridge: %v\n%s", err, out)
		}
	}
	script, err := filepath.Abs(filepath.Join("..", "clients", "interop", "interop.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), node, append([]string{script, bin}, args...)...)
	cmd.Env = append(os.Environ(), "BRIDGE_DATA_DIR="+t.TempDir())
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("interop failed: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "interop: ok") {
		t.Fatalf("interop did not report success:\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
}
