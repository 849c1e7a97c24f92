// Package lease holds the leases of the sessions this process drives
// (ARCHITECTURE.md, Processes sharing a record): one claimed before a
// harness starts or a resume writes anything, renewed every third of its
// length while the harness runs, released when it stops; a lease held by
// a process of this machine that no longer runs is taken over at once.
// It works against the store's core.SessionLeases and sees the live
// sessions only through its own small interface, Sessions.
package lease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// DefaultTTL is how long a live session's lease lasts unless renewed
// (Options.TTL); it is renewed every third of it.
const DefaultTTL = 30 * time.Second

// ProcessOwner names this process among those sharing a record, in its
// sessions' leases and as the origin of its appends: "HOST.PID.RANDOM"
// (the host name with characters other than letters, digits, '-' and '.'
// replaced, at most 32 bytes; a pid repeats across machines and restarts,
// hence the random part). It is the same for the life of the process.
var ProcessOwner = sync.OnceValue(func() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s.%d.%s", ownerHost(), os.Getpid(), hex.EncodeToString(b[:]))
})

// ownerHost is this machine's name as ProcessOwner spells it.
func ownerHost() string {
	host, _ := os.Hostname()
	host = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' {
			return r
		}
		return '_'
	}, host)
	if len(host) > 32 {
		host = host[:32]
	}
	return host
}

// ownerGone reports whether owner, as ProcessOwner spells it, names a
// process on this machine that no longer runs: one that was killed, or
// that could not release its leases as it stopped (a full disk). Owners
// of other machines, of other spellings, or whose pid runs (perhaps
// reused by another program) are not gone: their leases lapse by time.
func ownerGone(owner string) bool {
	rest, _, ok := cutLast(owner, ".")
	if !ok {
		return false
	}
	host, pidText, ok := cutLast(rest, ".")
	if !ok || host != ownerHost() {
		return false
	}
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 || pid == os.Getpid() {
		return false
	}
	return !processRuns(pid)
}

// cutLast splits s around the last sep.
func cutLast(s, sep string) (before, after string, found bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// Logger takes the log lines of lease work that fails without failing a
// request.
type Logger interface {
	Log(level int, msg string)
}

// Sessions are the harness sessions this process drives, as the renewer
// sees them.
type Sessions interface {
	// Alive lists the ids of the sessions whose harness runs here.
	Alive() []string
	// Running reports whether sessionID has a harness session here (one
	// starting or stopping included).
	Running(sessionID string) bool
	// Stop stops sessionID's harness here: its lease passed to another
	// process.
	Stop(ctx context.Context, sessionID string)
}

// Options configures Leases.
type Options struct {
	// Store is the record; without core.SessionLeases nothing is leased.
	Store core.Store
	// Owner names this process in its leases (ProcessOwner); TTL is how
	// long a lease lasts unless renewed.
	Owner    string
	TTL      time.Duration
	Sessions Sessions
	Log      Logger
	// Life ends the renewer; Go runs it (the caller's background group).
	Life context.Context
	Go   func(func())
}

// Leases claims, renews and releases this process's session leases. It is
// safe for concurrent use.
type Leases struct {
	opts      Options
	renewOnce sync.Once // starts the renewer
}

// New returns Leases.
func New(opts Options) *Leases { return &Leases{opts: opts} }

// leases returns the store's lease port, when it has one.
func (x *Leases) leases() (core.SessionLeases, bool) {
	l, ok := x.opts.Store.(core.SessionLeases)
	return l, ok
}

// Claim takes (or renews) this process's lease of a session it is
// about to drive; another process's unexpired lease is a live_elsewhere
// error and nothing is started. The first claim starts the renewer.
func (x *Leases) Claim(ctx context.Context, sessionID string) error {
	ls, ok := x.leases()
	if !ok {
		return nil
	}
	if err := x.acquire(ctx, ls, sessionID); err != nil {
		return err
	}
	x.renewOnce.Do(func() { x.opts.Go(func() { x.renew(ls) }) })
	return nil
}

// acquire takes the lease of sessionID for this process. A lease held
// by a process of this machine that no longer runs is taken over at once
// rather than when it lapses: its holder was killed or stopped without
// releasing it, and nothing drives the session. The takeover removes only
// that holder's lease, so of two processes taking it over one wins.
func (x *Leases) acquire(ctx context.Context, ls core.SessionLeases, sessionID string) error {
	err := ls.AcquireLease(ctx, sessionID, x.opts.Owner, x.opts.TTL)
	var held *core.LiveElsewhereError
	if err == nil || !errors.As(err, &held) || !ownerGone(held.Owner) {
		return err
	}
	x.opts.Log.Log(3, fmt.Sprintf("session %s: its lease was held by %s, which no longer runs; taking it over", sessionID, held.Owner))
	if rerr := ls.ReleaseLease(ctx, sessionID, held.Owner); rerr != nil {
		return fmt.Errorf("%w (taking over the lease of a stopped process failed: %v)", err, rerr)
	}
	return ls.AcquireLease(ctx, sessionID, x.opts.Owner, x.opts.TTL)
}

// Release gives up this process's lease of a session it no longer
// drives (none runs here), so another process may resume it at once.
func (x *Leases) Release(sessionID string) {
	ls, ok := x.leases()
	if !ok || x.opts.Sessions.Running(sessionID) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ls.ReleaseLease(ctx, sessionID, x.opts.Owner); err != nil {
		x.opts.Log.Log(2, fmt.Sprintf("session %s: could not release its lease (it lapses in %s): %v", sessionID, x.opts.TTL, err))
	}
}

// renew renews the lease of every session live here, every third of
// the lease's length, until the service's life ends. A lease found taken
// by another process (this one stalled past its end) means two processes
// could drive the session: this one stops its harness.
func (x *Leases) renew(ls core.SessionLeases) {
	t := time.NewTicker(x.opts.TTL / 3)
	defer t.Stop()
	for {
		select {
		case <-x.opts.Life.Done():
			return
		case <-t.C:
		}
		for _, id := range x.opts.Sessions.Alive() {
			ctx, cancel := context.WithTimeout(x.opts.Life, x.opts.TTL/3)
			err := ls.AcquireLease(ctx, id, x.opts.Owner, x.opts.TTL)
			cancel()
			switch {
			case err == nil:
			case core.ErrorCode(err) == core.CodeLiveElsewhere:
				x.opts.Log.Log(1, fmt.Sprintf("session %s: its lease passed to another process; stopping its harness here: %v", id, err))
				go x.opts.Sessions.Stop(context.WithoutCancel(x.opts.Life), id)
			default:
				x.opts.Log.Log(2, fmt.Sprintf("session %s: could not renew its lease: %v", id, err))
			}
		}
	}
}
