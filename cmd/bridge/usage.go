package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/bridge-dev/bridge/rpc/service"
	"github.com/bridge-dev/bridge/schema"
)

// prices checks the configured price table and hands it to the service.
func (c Config) prices(o *service.Options) error {
	for model, p := range c.Prices {
		for name, v := range map[string]float64{"input": p.Input, "output": p.Output, "cacheRead": p.CacheRead, "cacheWrite": p.CacheWrite} {
			if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("config: prices[%q].%s %v is not a price (US dollars per million tokens, not negative)", model, name, v)
			}
		}
	}
	o.Prices = c.Prices
	if c.WorktreesDir != "" && !filepath.IsAbs(c.WorktreesDir) {
		return fmt.Errorf("config: worktreesDir %q is not an absolute path", c.WorktreesDir)
	}
	o.WorktreeDir = c.WorktreesDir
	return nil
}

// diffCmd is `bridge diff SESSION [--since start|CHECKPOINT] [--stat]`:
// the session's changes (session/diff).
func (a *app) diffCmd(ctx context.Context, args []string) error {
	fs, asJSON := a.flags("diff")
	since := fs.String("since", "start", "start (the commit the session started from) or a checkpoint entry id")
	stat := fs.Bool("stat", false, "print the changed files and their line counts only")
	pos, err := a.parse(fs, args)
	if err != nil {
		return err
	}
	return a.withEnv(ctx, func(e *env) error {
		r, err := e.svc.SessionDiff(ctx, schema.SessionDiffParams{SessionID: pos[0], Since: *since})
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(a.stdout, r)
		}
		if r.Note != "" {
			fmt.Fprintf(a.stderr, "note: %s\n", r.Note)
		}
		if *stat {
			for _, f := range r.Files {
				counts := fmt.Sprintf("+%d -%d", f.Added, f.Removed)
				if f.Binary {
					counts = "binary"
				}
				fmt.Fprintf(a.stdout, "%s\t%s\n", counts, f.Path)
			}
			fmt.Fprintf(a.stdout, "%d files changed since %.12s\n", len(r.Files), r.BaseCommit)
			return nil
		}
		_, err = io.WriteString(a.stdout, r.Diff)
		if r.Truncated {
			fmt.Fprintln(a.stderr, "note: the diff was cut at 8 MiB; --stat lists every file")
		}
		return err
	})
}

// usageCmd is `bridge usage [SESSION] [--group-by session|harness|model|day]
// [--since T] [--until T]`: the usage ledger's sums (session/usage).
func (a *app) usageCmd(ctx context.Context, args []string) error {
	fs, asJSON := a.flags("usage")
	by := fs.String("group-by", "session", "session, harness, model or day (UTC)")
	since := fs.String("since", "", "only usage at or after this time (RFC 3339 or YYYY-MM-DD)")
	until := fs.String("until", "", "only usage before this time (RFC 3339 or YYYY-MM-DD)")
	pos, err := a.parse(fs, args)
	if err != nil {
		return err
	}
	p := schema.SessionUsageParams{GroupBy: schema.UsageGroupBy(*by)}
	switch len(pos) {
	case 0:
	case 1:
		p.SessionID = pos[0]
	default:
		return usageError{fmt.Sprintf("unexpected argument %q", pos[1])}
	}
	for _, f := range []struct {
		flag, v string
		to      **time.Time
	}{{"--since", *since, &p.Since}, {"--until", *until, &p.Until}} {
		t, err := parseTime(f.flag, f.v)
		if err != nil {
			return err
		}
		if !t.IsZero() {
			*f.to = &t
		}
	}
	return a.withEnv(ctx, func(e *env) error {
		r, err := e.svc.SessionUsage(ctx, p)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(a.stdout, r)
		}
		if len(r.Groups) == 0 {
			fmt.Fprintln(a.stdout, "no usage recorded")
			return nil
		}
		tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "%s\tharness\treports\tinput\toutput\tcache read\tcache write\tcost USD\t\n", *by)
		row := func(key string, g schema.UsageGroup) {
			cost := fmt.Sprintf("%.4f", g.CostUSD)
			if g.EstimatedUSD > 0 {
				cost += fmt.Sprintf(" (%.4f est.)", g.EstimatedUSD)
			}
			if g.UnpricedReports > 0 {
				cost += fmt.Sprintf(" +%d unpriced", g.UnpricedReports)
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t\n", key, g.Harness, g.Reports, g.InputTokens, g.OutputTokens,
				g.CacheReadTokens, g.CacheWriteTokens, cost)
		}
		for _, g := range r.Groups {
			row(g.Key, g)
		}
		row("total", r.Total)
		return tw.Flush()
	})
}
