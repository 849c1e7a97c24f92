package adaptertest

import (
	"context"

	"github.com/bridge-dev/bridge/core"
)

// AllCapable wraps a host so that its probe reports every capability
// available. It is for benchmarks that run an adapter against a fake
// harness process the adapter's real probe cannot recognise (no --version,
// no protocol schema), to measure the path through rpc/service; never use
// it where capabilities are what is being tested.
func AllCapable(h core.BridgeHost) core.BridgeHost { return allCapable{h} }

type allCapable struct{ core.BridgeHost }

func (a allCapable) Probe(ctx context.Context) core.Probe {
	p := core.Probe{Harness: a.Harness()}
	for _, n := range core.Capabilities {
		p.Capabilities = append(p.Capabilities, core.Capability{Name: n, Available: true})
	}
	return p
}
