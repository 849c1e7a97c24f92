package service

import (
	"context"
	"sort"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/schema"
)

// BridgeDoctor probes each adapter (or only p.Harness, when named) without
// mutating anything and reports what is available and what is missing.
func (s *Service) BridgeDoctor(ctx context.Context, p schema.DoctorParams) (schema.DoctorResult, error) {
	harness := p.Harness
	var hosts []core.BridgeHost
	if harness != "" {
		h, err := s.host(harness)
		if err != nil {
			return schema.DoctorResult{}, err
		}
		hosts = append(hosts, h)
	} else {
		for _, n := range s.Harnesses() {
			hosts = append(hosts, s.hosts[n])
		}
	}
	rep := schema.DoctorResult{DataDir: s.opts.DataDir, Database: s.opts.Database}
	v, err := s.opts.Store.SchemaVersion(ctx)
	if err != nil {
		return schema.DoctorResult{}, err
	}
	rep.SchemaVersion = v
	for _, h := range hosts {
		rep.Adapters = append(rep.Adapters, adapterReport(probe(ctx, h)))
	}
	return rep, nil
}

// adapterReport normalises a probe: every required and optional capability
// appears exactly once, in the design's order, with those the adapter did
// not mention counted as missing.
func adapterReport(p core.Probe) schema.AdapterReport {
	byName := map[string]core.Capability{}
	for _, c := range p.Capabilities {
		byName[c.Name] = c
	}
	var caps []core.Capability
	var missing []string
	add := func(name string, required bool) {
		c, ok := byName[name]
		if !ok {
			c = core.Capability{Name: name, Detail: "not reported by the adapter"}
		}
		c.Required = required
		caps = append(caps, c)
		delete(byName, name)
		if required && !c.Available {
			missing = append(missing, name)
		}
	}
	for _, n := range core.RequiredCapabilities {
		add(n, true)
	}
	for _, n := range core.OptionalCapabilities {
		add(n, false)
	}
	var extra []string
	for n := range byName {
		extra = append(extra, n)
	}
	sort.Strings(extra)
	for _, n := range extra {
		caps = append(caps, byName[n])
	}
	out := schema.AdapterReport{Harness: p.Harness, Binary: p.Binary, Version: p.Version, OK: len(missing) == 0, Missing: missing}
	for _, c := range caps {
		out.Capabilities = append(out.Capabilities, schema.Capability{Name: c.Name, Required: c.Required, Available: c.Available, Detail: c.Detail})
	}
	return out
}
