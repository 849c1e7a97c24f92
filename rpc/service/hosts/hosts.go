// Package hosts is the service's table of harness adapters and what each
// can do: the adapter of a harness by name, and its capability probe,
// cached for a short while, with the one refusal an operation gets when a
// capability it needs is missing (ARCHITECTURE.md, Capabilities and
// doctor).
package hosts

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// Table holds the configured adapters by harness name. It is safe for
// concurrent use; the set of adapters is fixed by New.
type Table struct {
	byName map[string]core.BridgeHost
	names  []string
	now    core.Clock

	mu     sync.Mutex
	probes map[string]cached // by harness; see Capabilities
}

// New returns the table of hs; now is the clock probes are aged by.
func New(hs []core.BridgeHost, now core.Clock) *Table {
	t := &Table{byName: map[string]core.BridgeHost{}, now: now, probes: map[string]cached{}}
	for _, h := range hs {
		t.byName[h.Harness()] = h
	}
	for n := range t.byName {
		t.names = append(t.names, n)
	}
	sort.Strings(t.names)
	return t
}

// Names lists the configured harness names, sorted.
func (t *Table) Names() []string { return append([]string(nil), t.names...) }

// All lists the configured adapters, sorted by harness name.
func (t *Table) All() []core.BridgeHost {
	out := make([]core.BridgeHost, 0, len(t.names))
	for _, n := range t.names {
		out = append(out, t.byName[n])
	}
	return out
}

// Lookup returns the adapter of harness, if configured.
func (t *Table) Lookup(harness string) (core.BridgeHost, bool) {
	h, ok := t.byName[harness]
	return h, ok
}

// Get returns the adapter for harness, or an unavailable error.
func (t *Table) Get(harness string) (core.BridgeHost, error) {
	h, ok := t.byName[harness]
	if !ok {
		return nil, core.Errorf(core.CodeUnavailable, "harness %q is not configured (have: %v)", harness, t.names)
	}
	return h, nil
}

// Probe runs a host's probe afresh, counting a panicking probe as "nothing
// available" instead of crashing.
func Probe(ctx context.Context, h core.BridgeHost) (p core.Probe) {
	defer func() {
		if r := recover(); r != nil {
			p = core.Probe{Harness: h.Harness()}
			for _, n := range core.Capabilities {
				p.Capabilities = append(p.Capabilities, core.Capability{Name: n, Detail: fmt.Sprintf("probe failed: %v", r)})
			}
		}
	}()
	return core.Confirm(h, h.Probe(ctx))
}

// probeTTL is how long a probe answers capability checks. Probes can be
// costly (a harness's --version, a protocol schema, a request to a hosting
// client), and capabilities change rarely; doctor always probes afresh.
const probeTTL = 10 * time.Second

type cached struct {
	p  core.Probe
	at time.Time
}

// Capabilities returns h's probe, reusing one younger than probeTTL.
func (t *Table) Capabilities(ctx context.Context, h core.BridgeHost) core.Probe {
	t.mu.Lock()
	c, ok := t.probes[h.Harness()]
	t.mu.Unlock()
	if ok && t.now().Sub(c.at) < probeTTL {
		return c.p
	}
	p := Probe(ctx, h)
	if ctx.Err() == nil {
		t.mu.Lock()
		t.probes[h.Harness()] = cached{p: p, at: t.now()}
		t.mu.Unlock()
	}
	return p
}

// Cached is the last capability probe of h's harness, if any, without
// probing (whatever its age).
func (t *Table) Cached(h core.BridgeHost) (core.Probe, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok := t.probes[h.Harness()]
	return c.p, ok
}

// Require refuses, before anything changes, an operation that needs
// capabilities the host lacks.
func (t *Table) Require(ctx context.Context, h core.BridgeHost, op string, caps ...string) error {
	p := t.Capabilities(ctx, h)
	missing := p.Missing(caps...)
	if len(missing) == 0 {
		return nil
	}
	var e *core.Error
	if p.Binary == "" && p.Version == "" {
		// Not a capability gap: the harness's program is missing. Say
		// which, and which harnesses could do it instead.
		msg := fmt.Sprintf("%s: harness %q is not installed", op, h.Harness())
		for _, c := range p.Capabilities {
			if !c.Available && c.Detail != "" {
				msg += ": " + c.Detail
				break
			}
		}
		if alt := t.with(ctx, h.Harness(), caps); len(alt) > 0 {
			msg += fmt.Sprintf("; use another harness, e.g. --harness %s (usable here: %s)", alt[0], strings.Join(alt, ", "))
		}
		e = core.Errorf(core.CodeUnavailable, "%s", msg)
	} else {
		e = core.Errorf(core.CodeUnavailable, "%s: harness %q lacks %v", op, h.Harness(), missing)
	}
	e.Missing = missing
	return e
}

// with lists the installed harnesses other than except that have every
// capability of caps, real harnesses first, then the fake.
func (t *Table) with(ctx context.Context, except string, caps []string) []string {
	var real, fake []string
	for _, name := range t.names {
		if name == except {
			continue
		}
		p := t.Capabilities(ctx, t.byName[name])
		if (p.Binary == "" && p.Version == "") || len(p.Missing(caps...)) > 0 {
			continue
		}
		if name == "fake" {
			fake = append(fake, name)
		} else {
			real = append(real, name)
		}
	}
	return append(real, fake...)
}
