package storage

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/bridge-dev/bridge/core"
)

var _ core.UsageLedger = (*DB)(nil)

// nanosPerDay is one UTC day in unix nanoseconds.
const nanosPerDay = int64(24 * time.Hour)

// usageKeys is the SQL of each grouping's key, over usage_daily and over
// usage_ledger.
var usageKeys = map[core.UsageGroupBy][2]string{
	core.UsageBySession: {"session_id", "session_id"},
	core.UsageByHarness: {"harness", "harness"},
	core.UsageByModel:   {"model", "model"},
	core.UsageByDay:     {"day", "at / 86400000000000"},
}

// Usage sums the usage ledger (migration 0014) over q's sessions and time,
// grouped. Whole UTC days come from the daily sums (a row per day, session
// and model; or, for all sessions, per day, harness and model); the parts of the first and last day that q cuts come from
// the rows of single reports, read by time. Both are read in one
// snapshot.
func (db *DB) Usage(ctx context.Context, q core.UsageQuery) ([]core.UsageSum, error) {
	keys, ok := usageKeys[q.GroupBy]
	if !ok {
		return nil, core.Errorf(core.CodeInvalid, "usage: unknown grouping %q (want session, harness, model or day)", q.GroupBy)
	}
	// Whole days [d0, d1) come from the daily sums: d0 is the first
	// midnight at or after Since, d1 the last at or before Until.
	var since, until int64
	d0, d1 := int64(-1<<40), int64(1<<40)
	if !q.Since.IsZero() {
		since = q.Since.UnixNano()
		d0 = ceilDiv(since, nanosPerDay)
	}
	if !q.Until.IsZero() {
		until = q.Until.UnixNano()
		d1 = floorDiv(until, nanosPerDay)
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && until <= since {
		return []core.UsageSum{}, nil
	}
	// The parts of the days cut: [Since, d0) and [d1, Until), or all of
	// [Since, Until) within one day.
	var spans [][2]int64
	switch {
	case d0 >= d1:
		spans = append(spans, [2]int64{since, until})
	default:
		if !q.Since.IsZero() && since < d0*nanosPerDay {
			spans = append(spans, [2]int64{since, d0 * nanosPerDay})
		}
		if !q.Until.IsZero() && d1*nanosPerDay < until {
			spans = append(spans, [2]int64{d1 * nanosPerDay, until})
		}
	}
	sums := map[string]*core.UsageSum{}
	err := db.read(ctx, func(t *stmtTx) error {
		session := ""
		if q.SessionID != "" {
			session = " AND session_id = ?"
		}
		if d0 < d1 {
			a := []any{d0, d1}
			if q.SessionID != "" {
				a = append(a, q.SessionID)
			}
			// Without a session to keep or to group by, the sums per day,
			// harness and model do.
			table := "usage_days"
			if q.SessionID != "" || q.GroupBy == core.UsageBySession {
				table = "usage_daily"
			}
			if err := addUsage(ctx, t, sums, fmt.Sprintf(`SELECT %s, min(harness), max(harness), sum(reports),
				sum(input_tokens), sum(output_tokens), sum(cache_read_tokens), sum(cache_write_tokens),
				sum(cost_usd), sum(estimated_usd), sum(unpriced)
				FROM %s WHERE day >= ? AND day < ?%s GROUP BY 1`, keys[0], table, session), a...); err != nil {
				return err
			}
		}
		for _, sp := range spans {
			a := []any{sp[0], sp[1]}
			if q.SessionID != "" {
				a = append(a, q.SessionID)
			}
			if err := addUsage(ctx, t, sums, fmt.Sprintf(`SELECT %s, min(harness), max(harness), count(*),
				sum(input_tokens), sum(output_tokens), sum(cache_read_tokens), sum(cache_write_tokens),
				coalesce(sum(cost_usd), 0), coalesce(sum(CASE WHEN estimated THEN cost_usd END), 0), sum(cost_usd IS NULL)
				FROM usage_ledger WHERE at >= ? AND at < ?%s GROUP BY 1`, keys[1], session), a...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]core.UsageSum, 0, len(sums))
	for _, s := range sums {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// addUsage runs one grouped sum and adds its rows to sums, by key (a day
// number becomes YYYY-MM-DD).
func addUsage(ctx context.Context, t *stmtTx, sums map[string]*core.UsageSum, query string, args ...any) error {
	rows, err := t.QueryContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("storage: usage: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var key any
		var minH, maxH string
		var r core.UsageSum
		if err := rows.Scan(&key, &minH, &maxH, &r.Reports, &r.InputTokens, &r.OutputTokens, &r.CacheReadTokens,
			&r.CacheWriteTokens, &r.CostUSD, &r.EstimatedUSD, &r.Unpriced); err != nil {
			return fmt.Errorf("storage: usage: %w", err)
		}
		switch k := key.(type) {
		case int64:
			r.Key = time.Unix(k*86400, 0).UTC().Format(time.DateOnly)
		case string:
			r.Key = k
		case []byte:
			r.Key = string(k)
		}
		if minH == maxH {
			r.Harness = minH
		}
		if s := sums[r.Key]; s != nil {
			s.Add(r)
		} else {
			sums[r.Key] = &r
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("storage: usage: %w", err)
	}
	return nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func ceilDiv(a, b int64) int64 { return -floorDiv(-a, b) }
