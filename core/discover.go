package core

import (
	"context"
	"time"
)

// TranscriptSource is implemented by adapters whose harness keeps its
// transcripts in files on this machine: Transcripts lists them (discovery,
// `bridge import --discover`). It only reads folders; it opens no
// transcript.
type TranscriptSource interface {
	Transcripts(ctx context.Context) (TranscriptList, error)
}

// TranscriptList is what a harness keeps where.
type TranscriptList struct {
	// Roots are the folders searched (they need not exist).
	Roots []string
	// Files are the transcripts found, regular files only, sorted.
	Files []string
}

// MultiImporter is implemented by adapters whose harness keeps many
// sessions in one file (OpenCode's SQLite database): ImportAll reads the
// sessions in it one at a time, calling record once per session with a
// reader that streams that session (as Importer.ImportStream does), so that
// only one session's batch is in memory at once. An error from record stops
// ImportAll, which returns it. Discovery prefers it to Importer.
type MultiImporter interface {
	ImportAll(ctx context.Context, path string, record func(read ImportReader) error) error
}

// ImportReader streams one session to sink, in batches, and returns its
// final header (see Importer).
type ImportReader func(sink ImportSink) (ImportedSession, error)

// DiscoveredFile is what the last discovery saw of one transcript.
type DiscoveredFile struct {
	Path      string
	Harness   string
	Size      int64
	ModTime   time.Time
	SessionID string
}

// DiscoveryLog remembers the transcripts discovery imported, so that the
// next discovery reads only files that are new or changed. A Store may
// implement it.
type DiscoveryLog interface {
	// DiscoveredFile returns the record of path; ok is false when it was
	// never imported by discovery.
	DiscoveredFile(ctx context.Context, harness, path string) (f DiscoveredFile, ok bool, err error)
	// RecordDiscovered stores (or replaces) the record of f.Path.
	RecordDiscovered(ctx context.Context, f DiscoveredFile) error
}
