package library

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/rpc/peer"
	"github.com/bridge-dev/bridge/schema"
)

// Discover finds the transcripts each configured harness keeps in its usual
// places (core.TranscriptSource) and imports those that are new or changed
// since the last discovery (same size and modification time: skipped).
// A grown transcript adds only its new entries, as imports are keyed by
// native ids. harness "" means every harness. Harness files are only read.
// A transcript that cannot be imported is reported in its harness's
// summary and the others go on. Progress counts transcripts.
func (s *Library) Discover(ctx context.Context, harness string) ([]schema.DiscoverSummary, error) {
	dl, ok := s.opts.Store.(core.DiscoveryLog)
	if !ok {
		return nil, core.Errorf(core.CodeUnsupported, "this record cannot remember discovered transcripts")
	}
	type source struct {
		name  string
		files []string
		sum   *schema.DiscoverSummary
	}
	var sources []source
	names := s.opts.Hosts.Names()
	if harness != "" {
		if _, err := s.opts.Hosts.Get(harness); err != nil {
			return nil, err
		}
		names = []string{harness}
	}
	progress := peer.ProgressFrom(ctx)
	total := 0
	for _, name := range names {
		h, err := s.opts.Hosts.Get(name)
		if err != nil {
			return nil, err
		}
		ts, ok := h.(core.TranscriptSource)
		if _, imp := h.(core.Importer); !ok || !imp {
			if harness != "" {
				return nil, core.Errorf(core.CodeUnsupported, "harness %s keeps no transcripts Bridge can discover", harness)
			}
			continue
		}
		list, err := ts.Transcripts(ctx)
		sum := &schema.DiscoverSummary{Harness: name, Roots: list.Roots, Files: len(list.Files)}
		if err != nil {
			if ctx.Err() != nil {
				return nil, core.E(core.CodeCancelled, "discover", ctx.Err())
			}
			sum.Failed = append(sum.Failed, schema.DiscoverFailure{Path: fmt.Sprint(list.Roots), Error: err.Error()})
		}
		sources = append(sources, source{name: name, files: list.Files, sum: sum})
		total += len(list.Files)
	}
	done := 0
	progress(0, int64(total), fmt.Sprintf("%d transcripts found", total))
	for _, src := range sources {
		for _, path := range src.files {
			if err := ctx.Err(); err != nil {
				return nil, core.E(core.CodeCancelled, "discover", err)
			}
			added, err := s.discoverOne(ctx, dl, src.name, path)
			switch {
			case err != nil:
				src.sum.Failed = append(src.sum.Failed, schema.DiscoverFailure{Path: path, Error: err.Error()})
			case added < 0:
				src.sum.Unchanged++
			default:
				if added > 0 {
					src.sum.Imported++
				}
				src.sum.Entries += added
			}
			done++
			progress(int64(done), int64(total), src.name+": "+filepath.Base(path))
		}
	}
	out := make([]schema.DiscoverSummary, 0, len(sources))
	for _, src := range sources {
		out = append(out, *src.sum)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Harness < out[j].Harness })
	return out, nil
}

// discoverOne imports one transcript unless the discovery log has it with
// the same size and modification time; it returns the entries added, or -1
// when the file was skipped as unchanged.
func (s *Library) discoverOne(ctx context.Context, dl core.DiscoveryLog, harness, path string) (int, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return 0, err
	}
	if !st.Mode().IsRegular() {
		return 0, fmt.Errorf("%s is not a regular file", path)
	}
	size, mtime := st.Size(), st.ModTime().UTC()
	// A database in WAL mode (OpenCode's) changes in its -wal file first.
	if wal, err := os.Lstat(path + "-wal"); err == nil && wal.Mode().IsRegular() {
		size += wal.Size()
		if wal.ModTime().After(mtime) {
			mtime = wal.ModTime().UTC()
		}
	}
	prev, ok, err := dl.DiscoveredFile(ctx, harness, path)
	if err != nil {
		return 0, err
	}
	if ok && prev.Size == size && prev.ModTime.Equal(mtime) {
		return -1, nil
	}
	// The progress of one file is not passed on: discovery reports files.
	quiet := peer.WithProgress(ctx, nil)
	var r Outcome
	h, err := s.opts.Hosts.Get(harness)
	if err != nil {
		return 0, err
	}
	if mi, ok := h.(core.MultiImporter); ok {
		// One file holding many sessions (OpenCode's database), each
		// recorded on its own as it is read.
		err := mi.ImportAll(quiet, path, func(read core.ImportReader) error {
			one, err := s.recordStream(quiet, harness, read, nil, "", harness+" session", size >= bulkBytes)
			r.Entries += one.Entries
			return err
		})
		if err != nil {
			return r.Entries, err
		}
	} else if r, err = s.Import(quiet, harness, path); err != nil {
		return 0, err
	}
	if err := dl.RecordDiscovered(ctx, core.DiscoveredFile{Harness: harness, Path: path, Size: size,
		ModTime: mtime, SessionID: r.SessionID}); err != nil {
		return r.Entries, err
	}
	return r.Entries, nil
}
