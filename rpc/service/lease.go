package service

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// defaultLeaseTTL is how long a live session's lease lasts unless renewed
// (Options.LeaseTTL); it is renewed every third of it.
const defaultLeaseTTL = 30 * time.Second

// leaseOwner names this process among those sharing the record: host, pid
// and a random part (a pid is reused across machines and restarts).
func leaseOwner() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s pid %d (%s)", host, os.Getpid(), hex.EncodeToString(b[:]))
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
	if err := ls.AcquireLease(ctx, sessionID, s.opts.LeaseOwner, s.opts.LeaseTTL); err != nil {
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
