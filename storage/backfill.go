package storage

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/bridge-dev/bridge/core"
)

// backfillBudget bounds the entries migration 11 may read to build window
// summaries: measured at 5–11 µs an entry on a slow machine, about a second
// once, on the first open after an upgrade. A session is counted at its
// highest seq (every entry a rebuild could read).
const backfillBudget = 100_000

// backfillWindows is the Go step of migration 11: it builds the window
// summary of each session that has entries and none at all, most recently
// updated first, while the budget lasts; a session whose entries do not fit
// what is left is skipped (a smaller one after it may fit) and is built on
// its first read. A summary that describes another head (a branch switch)
// is left to its next read, as before.
func backfillWindows(ctx context.Context, tx *sql.Tx) error {
	return backfillWindowsWithin(ctx, tx, backfillBudget)
}

func backfillWindowsWithin(ctx context.Context, tx *sql.Tx, budget int64) error {
	rows, err := tx.QueryContext(ctx, `SELECT s.id, coalesce((SELECT max(seq) FROM entries WHERE session_id = s.id), 0)
		FROM sessions s WHERE s.head_id <> ''
		AND NOT EXISTS (SELECT 1 FROM session_windows w WHERE w.session_id = s.id)
		ORDER BY s.updated_at DESC, s.id DESC`)
	if err != nil {
		return fmt.Errorf("backfill window summaries: %w", err)
	}
	type todo struct {
		id   string
		cost int64
	}
	var list []todo
	for rows.Next() {
		var t todo
		if err := rows.Scan(&t.id, &t.cost); err != nil {
			rows.Close()
			return fmt.Errorf("backfill window summaries: %w", err)
		}
		if t.cost <= budget {
			list = append(list, t)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("backfill window summaries: %w", err)
	}
	for _, t := range list {
		if t.cost > budget {
			continue
		}
		budget -= t.cost
		st, err := loadState(ctx, tx, t.id)
		if err != nil {
			return err
		}
		win, err := rebuildWindow(ctx, tx, t.id, st)
		if core.ErrorCode(err) == core.CodeCorrupt {
			continue // reads name the problem
		}
		if err != nil {
			return err
		}
		var stored core.Window // items left without a summary row are replaced
		if _, err := loadItems(ctx, tx, t.id, &stored); err != nil {
			return err
		}
		if err := saveWindow(ctx, tx, t.id, win, stored, true); err != nil {
			return err
		}
	}
	return nil
}
