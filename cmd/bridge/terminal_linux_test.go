package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY returns both ends of a new pseudo-terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("no pseudo-terminal: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); m.Close() })
	return m, s
}

// TestServeAtATerminal: `bridge serve` typed at a terminal says what it is
// waiting for, and Ctrl-C (SIGINT) then ends it with status 0 and no error
// line; plain `bridge` at a terminal prints the usage (status 2).
func TestServeAtATerminal(t *testing.T) {
	_, tty := openPTY(t)
	cmd := exec.Command(binPath, "serve")
	cmd.Env = append(os.Environ(), "BRIDGE_DATA_DIR="+t.TempDir())
	cmd.Stdin = tty
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(stderr)
	first, err := r.ReadString('\n')
	if err != nil || !strings.Contains(first, "waiting for JSON-RPC") {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("first stderr line %q (%v); want the hint", first, err)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	rest := make(chan string, 1)
	go func() {
		var b strings.Builder
		for {
			line, err := r.ReadString('\n')
			b.WriteString(line)
			if err != nil {
				rest <- b.String()
				return
			}
		}
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		after := <-rest
		if err != nil || strings.Contains(after, "ERROR") || strings.Contains(after, "canceled") {
			t.Fatalf("after Ctrl-C: %v, stderr %q; want status 0 and no error line", err, after)
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("bridge serve did not stop on SIGINT")
	}

	plain := exec.Command(binPath)
	plain.Env = cmd.Env
	plain.Stdin = tty
	out, err := plain.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "Usage:") {
		t.Fatalf("plain bridge at a terminal: %v %q; want the usage and status 2", err, out)
	}
}
