package service

import (
	"context"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/service/hosts"
	"github.com/bridge-dev/bridge/schema"
)

// BridgeDoctor probes each adapter (or only p.Harness, when named) without
// mutating anything and reports what is available and what is missing.
func (s *Service) BridgeDoctor(ctx context.Context, p schema.DoctorParams) (schema.DoctorResult, error) {
	harness := p.Harness
	var hs []core.BridgeHost
	if harness != "" {
		h, err := s.hosts.Get(harness)
		if err != nil {
			return schema.DoctorResult{}, err
		}
		hs = append(hs, h)
	} else {
		hs = s.hosts.All()
	}
	rep := schema.DoctorResult{DataDir: s.opts.DataDir, Database: s.opts.Database}
	v, err := s.opts.Store.SchemaVersion(ctx)
	if err != nil {
		return schema.DoctorResult{}, err
	}
	rep.SchemaVersion = v
	for _, h := range hs {
		r := adapterReport(hosts.Probe(ctx, h))
		if r.Installed {
			r.Presets = s.presetNames(ctx, h)
		}
		rep.Adapters = append(rep.Adapters, r)
	}
	return rep, nil
}

// presetNames lists the presets session/create accepts for h: the
// configuration file's, then the host's own (a host that cannot list them
// contributes none).
func (s *Service) presetNames(ctx context.Context, h core.BridgeHost) []string {
	var names []string
	seen := map[string]bool{}
	add := func(n string) {
		if n != "" && !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	for _, p := range s.opts.Presets {
		if p.Harness == "" || p.Harness == h.Harness() {
			add(p.Name)
		}
	}
	if ps, err := h.Presets(ctx); err == nil {
		for _, p := range ps {
			add(p.Name)
		}
	}
	return names
}

// adapterReport is a probe judged by core.Assess, in the contract's types.
func adapterReport(p core.Probe) schema.AdapterReport {
	a := core.Assess(p)
	out := schema.AdapterReport{Harness: p.Harness, Binary: p.Binary, Version: p.Version, Installed: a.Installed,
		OK: a.OK, Missing: a.Missing}
	for _, c := range a.Assessed {
		out.Capabilities = append(out.Capabilities, schema.Capability{Name: c.Name, Required: c.Need == core.NeedRequired,
			Need: schema.CapabilityNeed(c.Need), Reason: c.Reason, Available: c.Available, Detail: c.Detail})
	}
	return out
}
