// The end-to-end test of a session-hosting client over the rpc server (see
// doc.go).

package rpcwire_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/bridge-dev/bridge/adapters/adaptertest"
	"github.com/bridge-dev/bridge/adapters/rpchost"
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc"
	"github.com/bridge-dev/bridge/rpc/service"
	"github.com/bridge-dev/bridge/storage/storagetest"
)

// backend is what cmd/bridge builds for a hosting client: the service, and
// host/event forwarded to the rpchost adapter.
type backend struct {
	*service.Service
	host *rpchost.Host
}

// HostEvent makes backend an rpc.EventReceiver.
func (b backend) HostEvent(ctx context.Context, params json.RawMessage) {
	b.host.HostEvent(ctx, params)
}

var _ rpc.EventReceiver = backend{}

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestHostingClientOverRPC(t *testing.T) {
	node := adaptertest.FindBinary(t, "node")
	script := filepath.Join(adaptertest.RepoRoot(t), "clients", "interop", "host", "host.mjs")
	cmd := exec.Command(node, script, "--harness", "node-host", "--bridge-client")
	cmd.Dir = t.TempDir()
	toNode, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	fromNode, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr lockedBuf
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	db := storagetest.Open(t)
	var opened *rpchost.Host
	var svc *service.Service
	cfg := rpc.Config{
		Version:   "test",
		Harnesses: []string{"node-host"},
		Logger:    slog.New(slog.NewTextHandler(&stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Open: func(ctx context.Context, opts rpc.InitOptions, n service.Notifier, client rpc.Caller) (rpc.Backend, error) {
			var hosts []core.BridgeHost
			var h *rpchost.Host
			if opts.HostsSessions {
				h = rpchost.New(client, opts.HostHarness, opts.HostCapabilities)
				hosts = append(hosts, h)
			}
			s, err := service.New(service.Options{Store: db, Hosts: hosts, Notifier: n, DataDir: t.TempDir()})
			if err != nil {
				return nil, err
			}
			opened, svc = h, s
			return backend{Service: s, host: h}, nil
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code, serr := rpc.Serve(ctx, fromNode, toNode, cfg)
	_ = toNode.Close()
	waitErr := make(chan error, 1)
	go func() { waitErr <- cmd.Wait() }()
	select {
	case err = <-waitErr:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		err = <-waitErr
	}
	if err != nil || code != 0 || serr != nil {
		t.Fatalf("node exited with %v; Serve returned %d %v\nstderr:\n%s", err, code, serr, stderr.String())
	}
	if opened == nil || svc == nil || opened.Harness() != "node-host" {
		t.Fatalf("the backend was not opened with a hosting client (host %v)", opened)
	}
	sessions, _, err := db.ListSessions(context.Background(), core.ListQuery{IncludeArchived: true})
	if err != nil || len(sessions) != 1 || sessions[0].Harness != "node-host" {
		t.Fatalf("sessions %+v %v", sessions, err)
	}
	t.Logf("node said: %s", lastLine(stderr.String()))
}

func lastLine(s string) string {
	lines := bytes.Split(bytes.TrimSpace([]byte(s)), []byte("\n"))
	return string(lines[len(lines)-1])
}
