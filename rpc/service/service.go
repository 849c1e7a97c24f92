package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/service/attach"
	"github.com/bridge-dev/bridge/rpc/service/checkpointer"
	"github.com/bridge-dev/bridge/rpc/service/controller"
	"github.com/bridge-dev/bridge/rpc/service/hosts"
	"github.com/bridge-dev/bridge/rpc/service/lease"
	"github.com/bridge-dev/bridge/rpc/service/library"
	"github.com/bridge-dev/bridge/rpc/service/live"
	"github.com/bridge-dev/bridge/rpc/service/migrate"
	"github.com/bridge-dev/bridge/rpc/service/queue"
	"github.com/bridge-dev/bridge/rpc/service/sessions"
	"github.com/bridge-dev/bridge/rpc/service/workspace"
	"github.com/bridge-dev/bridge/schema"
)

// Options configures a Service. Store, Hosts and Notifier are required.
type Options struct {
	Store    core.Store
	Hosts    []core.BridgeHost
	Notifier Notifier
	// Presets are the presets from the configuration file, in addition to
	// those each host lists.
	Presets []core.Preset
	// DataDir and Database are reported by doctor.
	DataDir  string
	Database string
	// CheckpointTimeout bounds the wait for a checkpoint reply (default 30 s).
	CheckpointTimeout time.Duration
	// CheckpointInstructions are added to every checkpoint request.
	CheckpointInstructions string
	// RepoStatus returns `git status --porcelain` for a working directory,
	// used by recovery checkpoints. Nil means no repository evidence.
	RepoStatus func(ctx context.Context, cwd string) (string, error)
	// ResponseReserve is the number of tokens kept free for a response
	// (the response_reserve trigger); 0 disables it.
	ResponseReserve int64
	// Permissions asks the client about harness permission requests; nil
	// when the client did not declare capabilities.session.requestPermission
	// (the preset's policy answers, default reject).
	Permissions PermissionAsker
	// ApprovalTimeout bounds the wait for the client's answer (default
	// 5 minutes); then the preset's policy answers.
	ApprovalTimeout time.Duration
	// Now is the clock (default time.Now): TTLs and recorded times read it.
	Now core.Clock
	// IDs makes the ids of sessions, entries and previews (default
	// core.DefaultIDs).
	IDs *core.IDs

	// SuspendAfter is how long a live session may stay idle before it is
	// checkpointed (before_suspend) and its process stopped (0: 30 min;
	// negative: never).
	SuspendAfter time.Duration
	// ShutdownCheckpoint bounds, in total, the before_shutdown checkpoints
	// Close writes (0: 20 s).
	ShutdownCheckpoint time.Duration
	// NoShutdownCheckpoint turns the before_shutdown checkpoints off.
	NoShutdownCheckpoint bool
	// Git runs git (worktrees and diffs, rpc/service/workspace); nil: sessions have
	// no repository features.
	Git GitRunner
	// WorktreeDir is where sessions' worktrees are made (default
	// DataDir/worktrees).
	WorktreeDir string
	// Prices are the price table of the usage ledger, by model, in US
	// dollars per million tokens: usage a harness reports without a cost
	// is priced from it, marked estimated.
	Prices map[string]core.Price
	// RiskyResumeEntries: a native resume of a session whose last boundary
	// is more than this many entries behind its head is preceded by a
	// before_native_resume checkpoint (0: 200; negative: never on this
	// ground).
	RiskyResumeEntries int
	// LeaseOwner names this process in the leases of the sessions it
	// drives, when the Store implements core.SessionLeases (default: host,
	// pid and a random part); LeaseTTL is how long a lease lasts unless
	// renewed (0: 30 s).
	LeaseOwner string
	LeaseTTL   time.Duration
	// Follow announces to the Notifier the entries other processes sharing
	// the record append, when the Store implements core.ChangeFeed (serve,
	// web and acp set it; a one-shot command does not).
	Follow bool
}

// Service is Bridge's orchestration. It is safe for concurrent use.
type Service struct {
	opts      Options
	hosts     *hosts.Table     // the adapters and their probes
	lib       *library.Library // import, discovery, export, search
	images    attach.Images    // the images prompts carry
	migrate   *migrate.Migrator
	ckpt      *checkpointer.Checkpointer
	ctl       *controller.Controller // the checkpoints Bridge raises on its own, suspension, compact
	ws        *workspace.Workspace   // sessions' repositories, worktrees and diffs
	startedAt time.Time

	lives *live.Table        // the running harness sessions
	sess  *sessions.Sessions // the session flows: create, prompt, resume, …

	queues *queue.Queues // prompts waiting for a running turn

	life     context.Context // ends when Close begins to stop sessions
	stopLife context.CancelFunc
	bg       sync.WaitGroup // controller goroutines

	leases *lease.Leases // the leases of the sessions live here
}

// New returns a Service; call Close when done.
func New(opts Options) (*Service, error) {
	if opts.Store == nil || opts.Notifier == nil {
		return nil, errors.New("service: Store and Notifier are required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.IDs == nil {
		opts.IDs = core.DefaultIDs
	}
	if opts.CheckpointTimeout <= 0 {
		opts.CheckpointTimeout = 30 * time.Second
	}
	if opts.LeaseOwner == "" {
		opts.LeaseOwner = ProcessOwner()
	}
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = lease.DefaultTTL
	}
	s := &Service{opts: opts, hosts: hosts.New(opts.Hosts, opts.Now)}
	s.lives = live.NewTable(s.liveEnv())
	s.queues = queue.New(s.queueChanged)
	s.startedAt = opts.Now()
	worktrees := opts.WorktreeDir
	if worktrees == "" {
		worktrees = filepath.Join(opts.DataDir, "worktrees")
	}
	s.ws = workspace.New(workspace.Options{Store: opts.Store, Git: opts.Git, Dir: worktrees, Log: opts.Notifier})
	s.images = attach.Images{Store: opts.Store, DataDir: opts.DataDir}
	s.ckpt = checkpointer.New(checkpointer.Options{Store: opts.Store, Hosts: s.hosts,
		Lives: controller.CheckpointLives(s.lives, controlSessions{s}), Notifier: controller.CheckpointNotifier(opts.Notifier, s.announce),
		IDs: opts.IDs, Timeout: opts.CheckpointTimeout, Instructions: opts.CheckpointInstructions,
		RepoStatus: opts.RepoStatus, ResponseReserve: opts.ResponseReserve, StartedAt: s.startedAt})
	s.life, s.stopLife = context.WithCancel(context.Background())
	s.ctl = controller.New(controller.Options{Store: opts.Store, Hosts: s.hosts, Lives: s.lives, Sessions: controlSessions{s},
		Checkpointer: s.ckpt, Append: s.appendEntries, Log: opts.Notifier, Life: s.life, Go: s.goBackground,
		CheckpointTimeout: opts.CheckpointTimeout, ResponseReserve: opts.ResponseReserve, SuspendAfter: opts.SuspendAfter,
		ShutdownCheckpoint: opts.ShutdownCheckpoint, NoShutdownCheckpoint: opts.NoShutdownCheckpoint,
		RiskyResumeEntries: opts.RiskyResumeEntries})
	s.leases = lease.New(lease.Options{Store: opts.Store, Owner: opts.LeaseOwner, TTL: opts.LeaseTTL,
		Sessions: leasedSessions{s}, Log: opts.Notifier, Life: s.life, Go: s.goBackground})
	s.sess = sessions.New(sessions.Options{Store: opts.Store, Hosts: s.hosts, Lives: s.lives, Leases: s.leases,
		Workspace: s.ws, Images: s.images, Queues: s.queues, Checkpoints: s.ckpt, Controller: s.ctl, Notifier: opts.Notifier,
		Announce: s.announce, Presets: opts.Presets, IDs: opts.IDs, Now: opts.Now})
	s.lib = library.New(library.Options{Store: opts.Store, Hosts: s.hosts, IDs: opts.IDs, Prices: opts.Prices, Images: s.images,
		Sessions: forkSessions{s.sess}, Projector: s.ckpt})
	s.migrate = migrate.New(migrate.Options{Store: opts.Store, Hosts: s.hosts, Sessions: migrationSessions{s.sess}, Library: s.lib,
		Images: s.images, Log: opts.Notifier, DataDir: opts.DataDir, IDs: opts.IDs, Now: opts.Now})
	s.follow()
	return s, nil
}

// Harnesses lists the configured harness names, sorted.
func (s *Service) Harnesses() []string { return s.hosts.Names() }

// session loads a session's head record.
func (s *Service) session(ctx context.Context, id string) (core.Session, error) {
	return s.sess.Session(ctx, id)
}

// appendEntries appends to a session and tells the client about each entry.
func (s *Service) appendEntries(ctx context.Context, sessionID string, es ...core.NewEntry) ([]core.Entry, error) {
	return s.sess.Append(ctx, sessionID, es...)
}

// announce sends session/update (and session/contextCompacted) for entries
// already committed.
func (s *Service) announce(es ...core.Entry) {
	for _, e := range es {
		s.opts.Notifier.EntryAppended(e)
		if e.Kind == core.KindContextCompacted {
			var c core.Compacted
			if json.Unmarshal(e.Payload, &c) == nil {
				s.opts.Notifier.ContextCompacted(ContextCompacted{SessionID: e.SessionID, EntryID: e.ID,
					Harness: c.Harness, Trigger: schema.CompactionTrigger(c.Trigger), PreTokens: c.PreTokens, PostTokens: c.PostTokens,
					Estimated: c.Estimated, ShadowedTokens: c.ShadowedTokens, Cause: c.Cause})
			}
		}
	}
}

// Close is the graceful end of the service, for the shutdown request and
// the signals alike: every live session with meaningful work since its last
// boundary gets a before_shutdown checkpoint (in parallel, bounded by
// Options.ShutdownCheckpoint; Options.NoShutdownCheckpoint turns it off),
// then every live harness session and every adapter that keeps a process of
// its own is stopped.
func (s *Service) Close(ctx context.Context) error {
	s.ctl.Shutdown(ctx)
	s.stopLife()
	s.waitBackground()
	lives := s.lives.All()
	var errs []error
	for _, l := range lives {
		if err := l.Close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	// Adapters that keep a process of their own (OpenCode's server) stop it.
	for _, h := range s.hosts.All() {
		if c, ok := h.(interface{ Close(context.Context) error }); ok {
			if err := c.Close(ctx); err != nil {
				errs = append(errs, fmt.Errorf("close %s: %w", h.Harness(), err))
			}
		}
	}
	return errors.Join(errs...)
}

// goBackground runs f in a goroutine Close waits for.
func (s *Service) goBackground(f func()) {
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		f()
	}()
}

// waitBackground waits, boundedly, for controller goroutines (cancelled by
// then) to return.
func (s *Service) waitBackground() {
	done := make(chan struct{})
	go func() { s.bg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(controller.ShutdownGrace):
	}
}
