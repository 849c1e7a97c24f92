package service

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"path/filepath"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/internal/inputfile"
)

// importBatch is how many entries one import transaction appends.
const importBatch = 1000

// importFile brings an existing harness transcript into the record. Entries are
// keyed by their native ids, so importing the same file twice adds nothing;
// a transcript of a session already recorded (same native session id) adds
// only what is new.
func (s *Service) importFile(ctx context.Context, harness, path string) (ImportOutcome, error) {
	if harness == "" || path == "" {
		return ImportOutcome{}, core.Errorf(core.CodeInvalid, "harness and path are required")
	}
	if harness == ExportHarness {
		return s.importExport(ctx, path)
	}
	h, err := s.host(harness)
	if err != nil {
		return ImportOutcome{}, err
	}
	imp, ok := h.(core.Importer)
	if !ok {
		return ImportOutcome{}, core.Errorf(core.CodeUnsupported, "harness %s cannot import transcripts", harness)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return ImportOutcome{}, core.E(core.CodeInvalid, "path", err)
	}
	// Refused at once, before the adapter opens anything: a device, a
	// FIFO, a socket, a folder, a kernel file or an oversized file.
	if _, err := inputfile.Check(abs, harness+" transcript", 0); err != nil {
		return ImportOutcome{}, err
	}
	progress := progressFrom(ctx)
	is, err := imp.Import(ctx, abs, func(done, total int64) { progress(done, total, "reading "+filepath.Base(abs)) })
	if err != nil {
		return ImportOutcome{}, err
	}
	if is.NativeID == "" {
		// No readable session id: the file's content is its identity, so
		// importing the same bytes again finds the same session.
		if is.NativeID, err = contentID(ctx, abs, harness); err != nil {
			return ImportOutcome{}, err
		}
	}
	return s.recordImported(ctx, harness, is, "imported: "+filepath.Base(abs), filepath.Base(abs),
		func(done, total int64) { progress(done, total, "recording entries") })
}

// recordImported records a session read from a harness (a transcript file,
// or the harness's own history): the session found by its native id, else a
// new one titled is.Title or title, and the entries not yet recorded (by
// their native ids).
func (s *Service) recordImported(ctx context.Context, harness string, is core.ImportedSession, title, what string, progress func(done, total int64)) (ImportOutcome, error) {
	var sess core.Session
	var err error
	if is.NativeID != "" {
		sess, err = s.opts.Store.FindSessionByNative(ctx, harness, is.NativeID)
		if err != nil && core.ErrorCode(err) != core.CodeNotFound {
			return ImportOutcome{}, err
		}
	}
	// Every entry is checked before anything is written: a transcript with
	// one entry the store would refuse adds nothing, not a part.
	if c, ok := s.opts.Store.(entryChecker); ok {
		if err := c.CheckEntries(is.Entries); err != nil {
			return ImportOutcome{}, fmt.Errorf("import %s: %w", core.Quote(what), err)
		}
	}
	var newSess *core.Session
	if sess.ID == "" {
		if is.Title != "" {
			title = is.Title
		}
		// Created with the first batch, in its transaction.
		newSess = &core.Session{ID: s.opts.IDs.New("s_"), Harness: harness,
			Cwd: is.Cwd, Title: title, Model: is.Model, NativeSessionID: is.NativeID}
		sess.ID = newSess.ID
	}
	out := ImportOutcome{SessionID: sess.ID}
	for _, e := range is.Entries {
		if e.Kind == core.KindContextCompacted {
			out.ContextCompacted++
		}
	}
	total := int64(len(is.Entries))
	for i := 0; i < len(is.Entries) || newSess != nil; i += importBatch {
		end := min(i+importBatch, len(is.Entries))
		var added []core.Entry
		err := s.opts.Store.Update(ctx, func(w core.Writer) error {
			if newSess != nil {
				if _, err := w.CreateSession(ctx, *newSess); err != nil {
					return fmt.Errorf("record imported session: %w", err)
				}
			}
			var err error
			added, err = w.Append(ctx, sess.ID, is.Entries[i:end]...)
			return err
		})
		if err != nil {
			return ImportOutcome{}, fmt.Errorf("import %s entries %d-%d: %w", core.Quote(what), i, end, err)
		}
		newSess = nil
		out.Entries += len(added)
		progress(int64(end), total)
	}
	return out, nil
}

// entryChecker is implemented by stores that can tell, before writing,
// whether entries would be refused (storage.DB: the per-entry size limit).
type entryChecker interface {
	CheckEntries(entries []core.NewEntry) error
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
