package service

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

// defaultLeaseTTL is how long a live session's lease lasts unless renewed
// (Options.LeaseTTL); it is renewed every third of it.
const defaultLeaseTTL = 30 * time.Second

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

// leases returns the store's lease port, when it has one.
func (s *Service) leases() (core.SessionLeases, bool) {
	l, ok := s.opts.Store.(core.SessionLeases)
	return l, ok
}

// claimLease takes (or renews) this process's lease of a session it is
// about to drive; another process's unexpired lease is a live_elsewhere
// error and nothing is started. The first claim starts the renewer.
func (s *Service) claimLease(ctx context.Context, sessionID string) error {
	ls, ok := s.leases()
	if !ok {
		return nil
	}
	if err := s.acquireLease(ctx, ls, sessionID); err != nil {
		return err
	}
	s.renewOnce.Do(func() {
		s.bg.Add(1)
		go func() {
			defer s.bg.Done()
			s.renewLeases(ls)
		}()
	})
	return nil
}

// acquireLease takes the lease of sessionID for this process. A lease held
// by a process of this machine that no longer runs is taken over at once
// rather than when it lapses: its holder was killed or stopped without
// releasing it, and nothing drives the session. The takeover removes only
// that holder's lease, so of two processes taking it over one wins.
func (s *Service) acquireLease(ctx context.Context, ls core.SessionLeases, sessionID string) error {
	err := ls.AcquireLease(ctx, sessionID, s.opts.LeaseOwner, s.opts.LeaseTTL)
	var held *core.LiveElsewhereError
	if err == nil || !errors.As(err, &held) || !ownerGone(held.Owner) {
		return err
	}
	s.opts.Notifier.Log(3, fmt.Sprintf("session %s: its lease was held by %s, which no longer runs; taking it over", sessionID, held.Owner))
	if rerr := ls.ReleaseLease(ctx, sessionID, held.Owner); rerr != nil {
		return fmt.Errorf("%w (taking over the lease of a stopped process failed: %v)", err, rerr)
	}
	return ls.AcquireLease(ctx, sessionID, s.opts.LeaseOwner, s.opts.LeaseTTL)
}

// releaseLease gives up this process's lease of a session it no longer
// drives (none runs here), so another process may resume it at once.
func (s *Service) releaseLease(sessionID string) {
	ls, ok := s.leases()
	if !ok || s.liveFor(sessionID) != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ls.ReleaseLease(ctx, sessionID, s.opts.LeaseOwner); err != nil {
		s.opts.Notifier.Log(2, fmt.Sprintf("session %s: could not release its lease (it lapses in %s): %v", sessionID, s.opts.LeaseTTL, err))
	}
}

// renewLeases renews the lease of every session live here, every third of
// the lease's length, until the service's life ends. A lease found taken
// by another process (this one stalled past its end) means two processes
// could drive the session: this one stops its harness.
func (s *Service) renewLeases(ls core.SessionLeases) {
	t := time.NewTicker(s.opts.LeaseTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-s.life.Done():
			return
		case <-t.C:
		}
		lives := s.lives.All()
		for _, l := range lives {
			if !l.Alive() {
				continue
			}
			ctx, cancel := context.WithTimeout(s.life, s.opts.LeaseTTL/3)
			err := ls.AcquireLease(ctx, l.ID, s.opts.LeaseOwner, s.opts.LeaseTTL)
			cancel()
			switch {
			case err == nil:
			case core.ErrorCode(err) == core.CodeLiveElsewhere:
				s.opts.Notifier.Log(1, fmt.Sprintf("session %s: its lease passed to another process; stopping its harness here: %v", l.ID, err))
				go l.Close(context.WithoutCancel(s.life))
			default:
				s.opts.Notifier.Log(2, fmt.Sprintf("session %s: could not renew its lease: %v", l.ID, err))
			}
		}
	}
}
