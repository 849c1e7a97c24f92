package opencode

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
)

// TestStartServerRetriesATakenPort: when the port picked for the real
// opencode is taken before it can listen (here: held by the test), the
// server fails with ServeError and the host starts it again on another port.
func TestStartServerRetriesATakenPort(t *testing.T) {
	bin := adaptertest.FindBinary(t, "opencode")
	model := startModel(t)
	h := realHost(t, bin, t.TempDir(), model)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	takenPort := taken.Addr().(*net.TCPAddr).Port
	picks := 0
	pickPort = func() (int, error) {
		picks++
		if picks == 1 {
			return takenPort, nil
		}
		return freePort()
	}
	t.Cleanup(func() { pickPort = freePort })
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	s, err := h.startServer(ctx, h.cfg.StartTimeout)
	if err != nil {
		t.Fatalf("start with the first port taken: %v", err)
	}
	defer s.kill(context.Background())
	if picks != 2 || strings.HasSuffix(s.base, ":"+strconv.Itoa(takenPort)) {
		t.Fatalf("picked %d ports, server at %s (taken: %d); want a second, free port", picks, s.base, takenPort)
	}
}
