package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/service"
)

// app holds what every subcommand shares.
type app struct {
	dataDirFlag string
	// storeFlag is --store: where the record lives ("" decides by
	// BRIDGE_STORE, then config.json, else SQLite in the data directory).
	storeFlag string
	stdin     io.Reader
	stdout    io.Writer
	stderr    io.Writer
	// wantJSON: the command line asked for --json, so errors are JSON too.
	wantJSON bool
}

// env is an opened data directory: configuration, database and service.
type env struct {
	dir string
	cfg Config
	db  recordStore
	svc *service.Service
}

func (e *env) Close(ctx context.Context) error {
	err := e.svc.Close(ctx)
	if cerr := e.db.Close(); err == nil {
		err = cerr
	}
	return err
}

// openOptions are what serve learns from initialize.
type openOptions struct {
	initDataDir string
	harnesses   map[string]json.RawMessage
	notifier    service.Notifier
	extraHosts  []core.BridgeHost
	// permissions relays tool approvals to the client; nil when it did
	// not declare capabilities.session.requestPermission.
	permissions service.PermissionAsker
	// serve: the sidecar, whose shutdown checkpoints its live sessions; a
	// one-shot command does not.
	serve bool
	// follow: announce what other processes sharing the record append
	// (serve, acp and web do).
	follow bool
}

// store is an opened data directory: its configuration file and database.
type store struct {
	dir  string
	cfg  Config
	db   recordStore
	spec storeSpec
}

// openStore resolves the data directory, creates it owner-only, reads its
// configuration and opens its database.
func (a *app) openStore(ctx context.Context, initDataDir string) (store, error) {
	dir, cfg, err := a.prepareDir(initDataDir)
	if err != nil {
		return store{}, err
	}
	return a.openDatabase(ctx, dir, cfg)
}

// prepareDir resolves the data directory, creates it owner-only and reads
// its configuration: all but the database.
func (a *app) prepareDir(initDataDir string) (string, Config, error) {
	dir, err := resolveDataDir(a.dataDirFlag, initDataDir)
	if err != nil {
		return "", Config{}, err
	}
	if err := ensureDataDir(dir); err != nil {
		return "", Config{}, err
	}
	cfg, err := LoadConfig(dir)
	if err != nil {
		return "", Config{}, core.E(core.CodeInvalid, "configuration", err)
	}
	if cfg.MaxEntryBytes < 0 {
		return "", Config{}, core.Errorf(core.CodeInvalid, "configuration: maxEntryBytes must be positive")
	}
	return dir, cfg, nil
}

// openDatabase opens the record of a prepared data directory: SQLite in
// it, or the store --store, BRIDGE_STORE or config.json names.
func (a *app) openDatabase(ctx context.Context, dir string, cfg Config) (store, error) {
	spec, err := resolveStore(a.storeFlag, cfg, dir)
	if err != nil {
		return store{}, err
	}
	db, err := openSpec(ctx, spec, cfg.MaxEntryBytes)
	if err != nil {
		return store{}, err
	}
	return store{dir: dir, cfg: cfg, db: db, spec: spec}, nil
}

// open resolves and opens the data directory and builds the service.
func (a *app) open(ctx context.Context, o openOptions) (*env, error) {
	st, err := a.openStore(ctx, o.initDataDir)
	if err != nil {
		return nil, err
	}
	return a.build(st, o)
}

// build makes the service over an opened store; on failure it closes the
// store's database.
func (a *app) build(st store, o openOptions) (*env, error) {
	h, err := makeHosts(st.cfg, st.dir, o)
	if err != nil {
		st.db.Close()
		return nil, err
	}
	return a.buildWith(st, h, o)
}

// hostSet is the configuration with initialize's harness settings merged
// in, and the adapters it makes. It needs the data directory but not the
// database, so serve makes it while the database opens.
type hostSet struct {
	cfg   Config
	hosts []core.BridgeHost
}

// makeHosts merges initialize's harness settings into cfg and creates the
// adapters.
func makeHosts(cfg Config, dir string, o openOptions) (hostSet, error) {
	for name, raw := range o.harnesses {
		if err := cfg.MergeHarnesses(json.RawMessage(fmt.Sprintf("{%q:%s}", name, raw))); err != nil {
			return hostSet{}, core.E(core.CodeInvalid, "initializationOptions", err)
		}
	}
	hosts, err := buildHosts(cfg, dir)
	if err != nil {
		return hostSet{}, err
	}
	return hostSet{cfg: cfg, hosts: append(hosts, o.extraHosts...)}, nil
}

// buildWith makes the service over an opened store and the adapters made
// for it; on failure it closes the store's database.
func (a *app) buildWith(st store, h hostSet, o openOptions) (*env, error) {
	cfg := h.cfg
	n := o.notifier
	if n == nil {
		n = &cliNotifier{w: a.stderr}
	}
	so := service.Options{Store: st.db, Hosts: h.hosts, Notifier: n, Presets: cfg.Presets,
		DataDir: st.dir, Database: st.spec.String(), CheckpointTimeout: cfg.CheckpointTimeout(), CheckpointInstructions: cfg.CheckpointInstructions, RepoStatus: gitStatus, Git: runGit,
		Permissions: o.permissions, ApprovalTimeout: cfg.ApprovalTimeout(),
		LeaseOwner: processOwner(), LeaseTTL: cfg.leaseTTL(), Follow: o.serve || o.follow}
	if err := cfg.controller(&so); err != nil {
		st.db.Close()
		return nil, core.E(core.CodeInvalid, "configuration", err)
	}
	if !o.serve {
		so.NoShutdownCheckpoint, so.SuspendAfter = true, -1
	}
	svc, err := service.New(so)
	if err != nil {
		st.db.Close()
		return nil, err
	}
	return &env{dir: st.dir, cfg: cfg, db: st.db, svc: svc}, nil
}

// gitStatus returns `git status --porcelain` for dir ("" outside a
// repository). The arguments are fixed; dir is data, never executed. git
// runs from a fixed path, with a timeout, and with what a repository's own
// configuration could make it run switched off: no fsmonitor command, no
// hooks, no pager, no optional locks (a status must not write the index),
// no terminal prompt.
func gitStatus(ctx context.Context, dir string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := runGit(ctx, dir, "status", "--porcelain")
	if err != nil {
		var ge *gitError
		if errors.As(err, &ge) && strings.Contains(ge.stderr, "not a git repository") {
			return "", nil
		}
		return "", fmt.Errorf("git status in %s: %w", core.Quote(dir), err)
	}
	return string(out), nil
}

// gitDirs are where git is looked for first; PATH is consulted only when
// none holds it, once, and the absolute path found is kept.
var gitDirs = []string{"/usr/bin", "/usr/local/bin", "/bin", "/opt/homebrew/bin"}

var gitPath = sync.OnceValues(func() (string, error) {
	for _, d := range gitDirs {
		p := filepath.Join(d, "git")
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	p, err := exec.LookPath("git")
	if err != nil {
		return "", core.E(core.CodeUnavailable, "git not found", err)
	}
	return filepath.Abs(p)
})

func gitBinary() (string, error) { return gitPath() }

// cliNotifier tells a person at a terminal about warnings only.
type cliNotifier struct{ w io.Writer }

func (n *cliNotifier) EntryAppended(core.Entry)                  {}
func (n *cliNotifier) ContextCompacted(service.ContextCompacted) {}
func (n *cliNotifier) CheckpointSaved(service.CheckpointSaved)   {}
func (n *cliNotifier) Restored(service.Restored)                 {}
func (n *cliNotifier) Log(level int, msg string) {
	if level <= 2 {
		fmt.Fprintln(n.w, "bridge:", msg)
	}
}

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
