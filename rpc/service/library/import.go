package library

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/inputfile"
	"github.com/bridge-dev/bridge/rpc/peer"
)

// Import brings an existing harness transcript into the record. Entries are
// keyed by their native ids, so importing the same file twice adds nothing;
// a transcript of a session already recorded (same native session id) adds
// only what is new. The transcript is read, mapped and written in batches
// (core.Importer streams it), inside one write transaction: a transcript
// that fails anywhere (an entry the store refuses, a read error, input that
// turns out not to be a transcript, cancellation) adds nothing.
func (s *Library) Import(ctx context.Context, harness, path string) (Outcome, error) {
	if harness == "" || path == "" {
		return Outcome{}, core.Errorf(core.CodeInvalid, "harness and path are required")
	}
	if harness == ExportHarness {
		return s.importExport(ctx, path)
	}
	h, err := s.opts.Hosts.Get(harness)
	if err != nil {
		return Outcome{}, err
	}
	imp, ok := h.(core.Importer)
	if !ok {
		return Outcome{}, core.Errorf(core.CodeUnsupported, "harness %s cannot import transcripts", harness)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return Outcome{}, core.E(core.CodeInvalid, "path", err)
	}
	// Refused at once, before the adapter opens anything: a device, a
	// FIFO, a socket, a folder, a kernel file or an oversized file.
	fi, err := inputfile.Check(abs, harness+" transcript", 0)
	if err != nil {
		return Outcome{}, err
	}
	progress := peer.ProgressFrom(ctx)
	name := filepath.Base(abs)
	read := func(sink core.ImportSink) (core.ImportedSession, error) {
		return imp.ImportStream(ctx, abs, sink, func(done, total int64) { progress(done, total, "importing "+name) })
	}
	// No readable session id: the file's content is its identity, so
	// importing the same bytes again finds the same session.
	fallback := func() (string, error) { return contentID(ctx, abs, harness) }
	return s.recordStream(ctx, harness, read, fallback, "imported: "+name, name, fi.Size() >= bulkBytes)
}

// RecordImported records a session held in memory (the newest part of a
// harness's own history): see recordStream.
func (s *Library) RecordImported(ctx context.Context, harness string, is core.ImportedSession, title, what string) (Outcome, error) {
	read := func(sink core.ImportSink) (core.ImportedSession, error) {
		head := is
		for i := 0; i < len(is.Entries) || i == 0; i += core.ImportBatch {
			head.Entries = is.Entries[i:min(i+core.ImportBatch, len(is.Entries))]
			if err := sink(head); err != nil {
				return core.ImportedSession{}, err
			}
		}
		head.Entries = nil
		return head, nil
	}
	return s.recordStream(ctx, harness, read, nil, title, what, len(is.Entries) >= core.ImportBatch)
}

// recordStream records a session read from a harness as read streams it:
// the session found by its native id (the first batch's, else fallback's),
// else a new one titled by the header or title (or after its native id when
// title is ""), and the entries not yet
// recorded (by their native ids), batch by batch. Everything happens in one
// write transaction, so a failure anywhere leaves the record as it was.
//
// bulk says the input is large (bulkBytes or more): the store's bulk
// transaction then indexes it for search while it is written. A small one
// goes through a plain transaction, and the background indexer takes it
// with whatever else was written: a bulk transaction's fixed cost (a
// second transaction on the index, a goroutine) doubled the CPU of a
// 10-entry import, paid once per file when discovery finds many small ones.
func (s *Library) recordStream(ctx context.Context, harness string, read core.ImportReader, fallback func() (string, error), title, what string, bulk bool) (Outcome, error) {
	update := s.opts.Store.Update
	if b, ok := s.opts.Store.(bulkUpdater); ok && bulk {
		update = b.UpdateBulk
	}
	var tx *importTx
	err := update(ctx, func(w core.Writer) error {
		tx = &importTx{s: s, w: w, harness: harness, title: title, what: what, fallback: fallback}
		final, err := pipeline(ctx, read, func(part core.ImportedSession) error { return tx.write(ctx, part) })
		if err != nil {
			return err
		}
		return tx.finish(ctx, final)
	})
	if err != nil {
		if cerr := ctx.Err(); cerr != nil && core.ErrorCode(err) != core.CodeCancelled {
			// Cancelled while a batch was being written: the store's error
			// names the statement, the user asked to stop.
			return Outcome{}, core.E(core.CodeCancelled, fmt.Sprintf("import %s cancelled", core.Quote(what)), errors.Join(core.ErrCancelled, cerr))
		}
		return Outcome{}, err
	}
	return tx.out, nil
}

// importTx is one import's work inside its write transaction (see
// recordStream): the session it opens or creates, the batches it appends,
// what it reports.
type importTx struct {
	s                    *Library
	w                    core.Writer
	harness, title, what string
	fallback             func() (string, error)

	out     Outcome
	created *core.Session // the session this import created, if it did
	times   entryTimes
}

// open finds the session by its native id (head's, else fallback's), or
// creates it titled by the header or the import's title.
func (t *importTx) open(ctx context.Context, head core.ImportedSession) error {
	native := head.NativeID
	if native == "" && t.fallback != nil {
		var err error
		if native, err = t.fallback(); err != nil {
			return err
		}
	}
	if native != "" {
		sess, err := t.s.opts.Store.FindSessionByNative(ctx, t.harness, native)
		if err == nil {
			t.out.SessionID = sess.ID
			return nil
		}
		if core.ErrorCode(err) != core.CodeNotFound {
			return err
		}
	}
	title := t.title
	if head.Title != "" {
		title = head.Title
	} else if title == "" {
		title = "imported: " + t.harness + " session " + native
	}
	sess, err := t.w.CreateSession(ctx, core.Session{ID: t.s.opts.IDs.New("s_"), Harness: t.harness,
		Cwd: head.Cwd, Title: title, Model: head.Model, NativeSessionID: native})
	if err != nil {
		return fmt.Errorf("record imported session: %w", err)
	}
	t.created, t.out.SessionID = &sess, sess.ID
	return nil
}

// write appends one batch (opening the session at the first).
func (t *importTx) write(ctx context.Context, part core.ImportedSession) error {
	if t.out.SessionID == "" {
		if err := t.open(ctx, part); err != nil {
			return err
		}
	}
	t.times.fill(part.Entries)
	for _, e := range part.Entries {
		if e.Kind == core.KindContextCompacted {
			t.out.ContextCompacted++
		}
	}
	if len(part.Entries) == 0 {
		return nil
	}
	added, err := t.w.Append(ctx, t.out.SessionID, core.PriceUsage(t.s.opts.Prices, part.Entries)...)
	if err != nil {
		return fmt.Errorf("import %s: %w", core.Quote(t.what), err)
	}
	t.out.Entries += len(added)
	return nil
}

// finish dates the session by its entries and sets a title or model read
// after it was created; a transcript of no entries only opens it.
func (t *importTx) finish(ctx context.Context, final core.ImportedSession) error {
	if t.out.SessionID == "" {
		return t.open(ctx, final)
	}
	if !t.times.last.IsZero() {
		// The entries carry the harness's own times: the session is
		// dated by them (and one imported before it got them is
		// corrected).
		rt, ok := t.w.(sessionRetimer)
		if !ok {
			return core.Errorf(core.CodeInternal, "this record cannot date an imported session by its entries")
		}
		if err := rt.RetimeSession(ctx, t.out.SessionID); err != nil {
			return err
		}
	}
	if t.created == nil {
		return nil
	}
	var p core.SessionPatch
	if final.Title != "" && final.Title != t.created.Title {
		p.Title = &final.Title
	}
	if final.Model != "" && final.Model != t.created.Model {
		p.Model = &final.Model
	}
	if p.Title != nil || p.Model != nil {
		if _, err := t.w.PatchSession(ctx, t.created.ID, p); err != nil {
			return fmt.Errorf("record imported session: %w", err)
		}
	}
	return nil
}

// sessionRetimer dates a session by its entries' times (the store's
// writer implements it).
type sessionRetimer interface {
	RetimeSession(ctx context.Context, sessionID string) error
}

// entryTimes fills in the times of imported entries that have none: an
// entry takes its predecessor's time, and those before the first entry
// with a time take that one's. last is the newest time seen (zero: the
// import carries no times, and its entries are recorded at the moment of
// import).
type entryTimes struct{ last time.Time }

func (t *entryTimes) fill(es []core.NewEntry) {
	if t.last.IsZero() {
		for _, e := range es {
			if !e.At.IsZero() {
				t.last = e.At
				break
			}
		}
	}
	for i := range es {
		if es[i].At.IsZero() {
			es[i].At = t.last
		} else {
			t.last = es[i].At
		}
	}
}

// pipelineDepth is how many batches the reader may map ahead of the
// writer: reading and mapping the next batches overlaps with writing one,
// and at most pipelineDepth+2 batches are in memory.
const pipelineDepth = 2

// pipeline runs read on its own goroutine, handing each batch it yields to
// write on this one (inside the caller's transaction). It returns read's
// final header, or the first error of either side; an error of write stops
// read.
func pipeline(ctx context.Context, read core.ImportReader, write core.ImportSink) (core.ImportedSession, error) {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	parts := make(chan core.ImportedSession, pipelineDepth)
	var final core.ImportedSession
	var rerr error
	go func() {
		defer close(parts)
		defer func() {
			if r := recover(); r != nil {
				rerr = core.Errorf(core.CodeInternal, "import: reading the transcript failed: %v", r)
			}
		}()
		final, rerr = read(func(part core.ImportedSession) error {
			if rctx.Err() != nil { // checked first: select picks at random when both are ready
				return core.E(core.CodeCancelled, "import", rctx.Err())
			}
			select {
			case parts <- part:
				return nil
			case <-rctx.Done():
				return core.E(core.CodeCancelled, "import", rctx.Err())
			}
		})
	}()
	var werr error
	for part := range parts {
		if werr == nil {
			if werr = write(part); werr != nil {
				cancel() // the reader stops at its next batch; parts drains
			}
		}
	}
	if werr != nil {
		return core.ImportedSession{}, werr
	}
	return final, rerr
}

// bulkBytes is the input size from which an import uses the store's bulk
// transaction (see recordStream).
const bulkBytes = 1 << 20

// bulkUpdater is implemented by stores with a transaction made for bulk
// writes (storage.DB: the entries are indexed for search while it runs).
// Same contract as core.Store's Update.
type bulkUpdater interface {
	UpdateBulk(ctx context.Context, fn func(w core.Writer) error) error
}

// bulkDone is implemented by stores that can give back what a bulk write
// left behind (storage.DB: a truncating checkpoint of the write-ahead log).
type bulkDone interface {
	AfterBulk(ctx context.Context) error
}

// AfterBulk runs after an import or a discovery: the store truncates its
// write-ahead log and the Go runtime returns the memory the import used to
// the operating system, so a long-running sidecar does not keep either at
// its peak.
func (s *Library) AfterBulk(ctx context.Context) {
	if b, ok := s.opts.Store.(bulkDone); ok {
		_ = b.AfterBulk(context.WithoutCancel(ctx)) // best effort: the background checkpointer retries
	}
	debug.FreeOSMemory()
}

// ContentIDPrefix starts the native session id Bridge gives an imported
// transcript whose own session id cannot be read: a digest of the file's
// bytes. It is no id the harness knows, so resume never tries it natively.
const ContentIDPrefix = "bridge-import-sha256:"

func contentID(ctx context.Context, path, harness string) (string, error) {
	f, err := inputfile.Open(ctx, path, harness+" transcript", 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return ContentIDPrefix + hex.EncodeToString(h.Sum(nil)), nil
}
