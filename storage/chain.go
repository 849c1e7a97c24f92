package storage

import (
	"context"
	"fmt"
	"math/bits"
	"strconv"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/storage/internal/record"
)

// chainSQL reads a session's entries newest first from a seq down, at
// most chainBatch(batch) of them. The limit is written into the statement's
// text, one statement per size class: SQLite plans with the value of a
// bound LIMIT, so a statement whose LIMIT is a parameter is compiled again
// every time it is bound (every page; a fifth of the page's time).
func chainSQL(limit int) string {
	return chainQueries[bits.Len(uint(limit))-1]
}

// chainBatch rounds a batch size up to the next of the size classes (powers
// of two from 16 to 1024). Only the rows the scan steps through are read, so
// a larger limit costs nothing.
func chainBatch(batch int) int {
	batch = min(max(batch, 16), 1024)
	return 1 << bits.Len(uint(batch-1))
}

var chainQueries = func() []string {
	q := make([]string, 11)
	for i := range q {
		q[i] = `SELECT ` + entryCols + ` FROM entries WHERE session_id = ? AND seq <= ? ORDER BY seq DESC LIMIT ` + strconv.Itoa(1<<i)
	}
	return q
}()

// forwardQueries read a session's entries oldest first from a seq up to
// another, in the size classes of chainQueries.
var forwardQueries = func() []string {
	q := make([]string, 11)
	for i := range q {
		q[i] = `SELECT ` + entryCols + ` FROM entries WHERE session_id = ? AND seq >= ? AND seq <= ? ORDER BY seq LIMIT ` + strconv.Itoa(1<<i)
	}
	return q
}()

// scanChain reads the entries of a session that has never branched
// newest first from fromSeq down by the (session_id, seq) index, checked
// as one chain (record.ScanChain).
func scanChain(ctx context.Context, q querier, sessionID, firstID string, fromSeq int64, batch int, fn func(core.Entry) bool) (ok bool, err error) {
	batch = chainBatch(batch)
	query := chainSQL(batch)
	return record.ScanChain(firstID, fromSeq, batch, func(upper int64, visit func(core.Entry) bool) (int, error) {
		return visitRows(ctx, q, sessionID, visit, query, sessionID, upper)
	}, fn)
}

// visitRows runs a query of entries of session sessionID and hands each
// row to visit until it returns false; it returns how many rows it read.
func visitRows(ctx context.Context, q querier, sessionID string, visit func(core.Entry) bool, query string, args ...any) (int, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return 0, fmt.Errorf("storage: read session %s: %w", sessionID, err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var r entryRow
		if err := rows.Scan(r.dest()...); err != nil {
			return n, fmt.Errorf("storage: read session %s: %w", sessionID, err)
		}
		n++
		if !visit(r.entry()) {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return n, fmt.Errorf("storage: read session %s: %w", sessionID, err)
	}
	return n, nil
}

// scanForward reads the entries of a session that has never branched
// oldest first from afterSeq up to headSeq by the (session_id, seq) index,
// checked as one chain (record.ScanForward).
func scanForward(ctx context.Context, q querier, sessionID string, afterSeq, headSeq int64, batch int, fn func(core.Entry) bool) (ok bool, err error) {
	batch = chainBatch(batch)
	query := forwardQueries[bits.Len(uint(batch))-1]
	return record.ScanForward(afterSeq, headSeq, batch, func(lower int64, visit func(core.Entry) bool) (int, error) {
		return visitRows(ctx, q, sessionID, visit, query, sessionID, lower, headSeq)
	}, fn)
}
