package inputfile_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/inputfile"
)

// TestRefusesWhatIsNotARegularFile: devices, FIFOs, sockets, directories and
// kernel files are refused before a byte is read (a FIFO with no writer
// would block an open or a read forever; /dev/zero never ends).
func TestRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "environ")
	if err := os.Symlink("/proc/self/environ", link); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"/dev/zero":          "system file",
		"/dev/urandom":       "system file",
		"/dev/stdin":         "system file",
		"/proc/self/fd/0":    "system file",
		"/proc/self/environ": "system file",
		link:                 "system file",
		fifo:                 "FIFO",
		dir:                  "directory",
	} {
		_, err := inputfile.Open(context.Background(), path, "transcript", 0)
		if core.ErrorCode(err) != core.CodeInvalid || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: want an invalid error saying %q, got %v", path, want, err)
		}
	}
	if _, err := inputfile.Open(context.Background(), filepath.Join(dir, "missing"), "transcript", 0); core.ErrorCode(err) != core.CodeNotFound {
		t.Errorf("missing file: want not_found, got %v", err)
	}
}

func TestSizeLimitAndCancel(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f.jsonl")
	if err := os.WriteFile(p, []byte(strings.Repeat("a\n", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := inputfile.Open(context.Background(), p, "transcript", 199); core.ErrorCode(err) != core.CodeInvalid ||
		!strings.Contains(err.Error(), "limit of 199 bytes") {
		t.Fatalf("over the size limit: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f, err := inputfile.Open(ctx, p, "transcript", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cancel()
	if _, err := f.Read(make([]byte, 10)); core.ErrorCode(err) != core.CodeCancelled {
		t.Fatalf("read after cancel: %v", err)
	}
}

func TestLinesAreBounded(t *testing.T) {
	in := "short\r\n" + strings.Repeat("x", 3000) + "\nlast"
	l := inputfile.NewLines(strings.NewReader(in), "transcript", 1000)
	if b, err := l.Next(); err != nil || string(b) != "short" {
		t.Fatalf("first line %q %v", b, err)
	}
	_, err := l.Next()
	if core.ErrorCode(err) != core.CodeInvalid || !strings.Contains(err.Error(), "line 2 is longer than the limit of 1000 bytes") {
		t.Fatalf("long line: %v", err)
	}
	l = inputfile.NewLines(strings.NewReader("a\nb"), "t", 0)
	var got []string
	for {
		b, err := l.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(b))
	}
	if strings.Join(got, ",") != "a,b" {
		t.Fatalf("lines %q", got)
	}
}

func TestQuoteKeepsAShortPrefix(t *testing.T) {
	q := core.Quote(strings.Repeat("é", 5<<20))
	if len(q) > 200 || !strings.Contains(q, "bytes)") {
		t.Fatalf("quote of 10 MB: %d bytes: %.100s", len(q), q)
	}
}
