package core

import (
	"context"
	"time"
)

// ImportBatcher groups the entries an importer maps into batches for an
// ImportSink. Head is the session header handed with every batch; Hold
// keeps batches back while the header's NativeID is still unknown (the
// importer has not read it yet), up to a limit.
type ImportBatcher struct {
	Sink ImportSink
	Head ImportedSession // header so far; Entries unused
	// Ready, when set, tells whether the header is final enough to hand
	// out a batch (e.g. the session id has been read). Batches are held
	// until it returns true or MaxHold entries are waiting.
	Ready func() bool
	// At is the time of the transcript line being mapped: entries queued
	// without a time of their own get it. An importer sets it from each
	// line that carries a time, so a line without one takes its
	// predecessor's.
	At time.Time

	buf  []NewEntry
	sent bool
	err  error
}

// MaxHold bounds how many entries an ImportBatcher holds while its header
// is not ready.
const MaxHold = 4 * ImportBatch

// Add queues entries and hands a batch to the sink once ImportBatch are
// waiting. It returns the sink's first error (and keeps returning it).
func (b *ImportBatcher) Add(es ...NewEntry) error {
	if b.err != nil {
		return b.err
	}
	b.Queue(es...)
	if len(b.buf) >= ImportBatch {
		if !b.sent && b.Ready != nil && !b.Ready() && len(b.buf) < MaxHold {
			return nil
		}
		return b.send(len(b.buf))
	}
	return nil
}

// Stamp sets At to t, the time of the line being mapped, unless t is zero
// or outside what the record can hold (core.Representable): then the
// previous line's time stays.
func (b *ImportBatcher) Stamp(t time.Time) {
	if !t.IsZero() && Representable(t) {
		b.At = t.UTC()
	}
}

// ParseTime reads a transcript's time: RFC 3339 (with or without
// fractional seconds). Anything else is the zero time (no time).
func ParseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// Queue appends entries without handing any out: for an importer that
// decides itself when to flush (FlushUpTo).
func (b *ImportBatcher) Queue(es ...NewEntry) {
	for _, e := range es {
		if e.At.IsZero() {
			e.At = b.At
		}
		b.buf = append(b.buf, e)
	}
}

// Pending returns the entries queued and not yet handed out; an importer
// may change them (e.g. fold a summary into an earlier entry).
func (b *ImportBatcher) Pending() []NewEntry { return b.buf }

// FlushUpTo hands out the first n queued entries, keeping the rest.
func (b *ImportBatcher) FlushUpTo(n int) error {
	if b.err != nil || n <= 0 {
		return b.err
	}
	return b.send(n)
}

// Flush hands out everything queued (and, on the first call with nothing
// queued, an empty batch, so that the sink sees the session).
func (b *ImportBatcher) Flush() error {
	if b.err != nil {
		return b.err
	}
	if len(b.buf) == 0 && b.sent {
		return nil
	}
	return b.send(len(b.buf))
}

func (b *ImportBatcher) send(n int) error {
	for n > 0 || !b.sent {
		k := min(n, ImportBatch)
		part := b.Head
		part.Entries = b.buf[:k:k]
		// The batch is the sink's to keep: the rest moves to a new slice.
		b.buf = append(make([]NewEntry, 0, ImportBatch+64), b.buf[k:]...)
		if err := b.Sink(part); err != nil {
			b.err = err
			return err
		}
		b.sent = true
		n -= k
	}
	return nil
}

// CollectImport runs imp's ImportStream and returns every entry in one
// ImportedSession. It holds the whole transcript: for tests and for reading
// one session's history, not for importing into the record.
func CollectImport(ctx context.Context, imp Importer, path string, progress func(done, total int64)) (ImportedSession, error) {
	var all []NewEntry
	is, err := imp.ImportStream(ctx, path, func(part ImportedSession) error {
		all = append(all, part.Entries...)
		return nil
	}, progress)
	is.Entries = all
	return is, err
}

// Err returns the first error the sink returned.
func (b *ImportBatcher) Err() error { return b.err }
