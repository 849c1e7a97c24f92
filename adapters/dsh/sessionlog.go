package dsh

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/klauspost/compress/zstd"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/internal/inputfile"
)

// Header is line 1 of a DSH session log.
type Header struct {
	Type            string `json:"type"`
	Version         int    `json:"version"`
	ID              string `json:"id"`
	CreatedAt       int64  `json:"createdAt"`
	Cwd             string `json:"cwd"`
	DelegationDepth int    `json:"delegationDepth"`
	AgentPreset     string `json:"agentPreset,omitempty"`
}

// Log is a DSH session log read from disk.
type Log struct {
	Header Header
	Events []Event
	// Frames is how many zstd frames were decoded (0 for plain JSONL).
	Frames int
	// Unreadable holds lines that were not JSON events, kept as data.
	Unreadable []BadLine
}

// BadLine is a log line that could not be read as an event.
type BadLine struct {
	Line int    `json:"line"`
	Text string `json:"text"`
	Err  string `json:"error"`
}

var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// ReadLog reads a DSH session log: session.jsonl.zstd (zstd frames appended
// one after another, one per flush; every frame is read) or plain JSONL.
// On a truncated or corrupt frame it returns what was read before the frame
// together with a core.CodeCorrupt error naming the frame's byte offset.
func ReadLog(path string, progress func(done, total int64)) (*Log, error) {
	return ReadLogContext(context.Background(), path, progress)
}

// ReadLogContext is ReadLog that ctx cancels. Only a regular file within
// inputfile.DefaultMaxBytes is read; its decoded content is bounded by the
// same limit, and each line by inputfile.MaxLineBytes.
func ReadLogContext(ctx context.Context, path string, progress func(done, total int64)) (*Log, error) {
	data, err := inputfile.ReadFile(ctx, path, "dsh session log", 0)
	if err != nil {
		return nil, err
	}
	if progress == nil {
		progress = func(int64, int64) {}
	}
	lr := &lineReader{log: &Log{}}
	total := int64(len(data))
	if !bytes.HasPrefix(data, zstdMagic) {
		lr.write(data)
		lr.flush()
		progress(total, total)
		return lr.result(path)
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(inputfile.DefaultMaxBytes)))
	if err != nil {
		return nil, core.E(core.CodeInternal, "zstd decoder", err)
	}
	defer dec.Close()
	var buf []byte
	var decoded int64
	for off := 0; off < len(data); {
		if err := ctx.Err(); err != nil {
			return nil, core.E(core.CodeCancelled, "dsh import cancelled", errors.Join(core.ErrCancelled, err))
		}
		n, skippable, ferr := frameLen(data[off:])
		if ferr == nil && !skippable {
			buf, ferr = dec.DecodeAll(data[off:off+n], buf[:0])
		}
		if ferr != nil {
			lr.flush()
			log, _ := lr.result(path)
			return log, &core.Error{Code: core.CodeCorrupt,
				Message: fmt.Sprintf("dsh session log %s: zstd frame %d at byte offset %d of %d is truncated or corrupt (%d events read before it are kept)",
					core.Quote(filepath.Base(path)), lr.log.Frames+1, off, total, len(log.Events)),
				Data: map[string]any{"offset": off, "path": path}, Err: ferr}
		}
		if !skippable {
			decoded += int64(len(buf))
			if decoded > inputfile.DefaultMaxBytes {
				return nil, core.Errorf(core.CodeInvalid, "dsh session log %s decompresses to more than the limit of %d bytes",
					core.Quote(filepath.Base(path)), inputfile.DefaultMaxBytes)
			}
			lr.log.Frames++
			lr.write(buf)
		}
		if lr.err != nil {
			return nil, lr.err
		}
		off += n
		progress(int64(off), total)
	}
	lr.flush()
	return lr.result(path)
}

// frameLen returns the length of the zstd (or skippable) frame at the start
// of b, walking its block headers without decompressing.
func frameLen(b []byte) (n int, skippable bool, err error) {
	if len(b) < 8 {
		return 0, false, fmt.Errorf("frame header truncated (%d bytes left)", len(b))
	}
	if m := binary.LittleEndian.Uint32(b); m&0xFFFFFFF0 == 0x184D2A50 {
		size := int(binary.LittleEndian.Uint32(b[4:]))
		if 8+size > len(b) {
			return 0, true, fmt.Errorf("skippable frame truncated")
		}
		return 8 + size, true, nil
	}
	if !bytes.HasPrefix(b, zstdMagic) {
		return 0, false, fmt.Errorf("no zstd frame magic (found % x)", b[:4])
	}
	fhd := b[4]
	single := fhd&0x20 != 0
	pos := 5
	if !single {
		pos++
	}
	pos += []int{0, 1, 2, 4}[fhd&3]
	switch fhd >> 6 {
	case 0:
		if single {
			pos++
		}
	case 1:
		pos += 2
	case 2:
		pos += 4
	case 3:
		pos += 8
	}
	for {
		if pos+3 > len(b) {
			return 0, false, fmt.Errorf("block header truncated")
		}
		h := uint32(b[pos]) | uint32(b[pos+1])<<8 | uint32(b[pos+2])<<16
		pos += 3
		size := int(h >> 3)
		switch (h >> 1) & 3 {
		case 1: // RLE: one byte repeated
			size = 1
		case 3:
			return 0, false, fmt.Errorf("reserved block type")
		}
		if pos+size > len(b) {
			return 0, false, fmt.Errorf("block truncated (needs %d bytes, %d left)", size, len(b)-pos)
		}
		pos += size
		if h&1 != 0 {
			break
		}
	}
	if fhd&0x04 != 0 {
		if pos+4 > len(b) {
			return 0, false, fmt.Errorf("content checksum truncated")
		}
		pos += 4
	}
	return pos, false, nil
}

// lineReader splits decoded bytes into lines across frame boundaries.
type lineReader struct {
	log   *Log
	carry []byte
	line  int
	err   error // a line over inputfile.MaxLineBytes
}

func (r *lineReader) write(b []byte) {
	r.carry = append(r.carry, b...)
	for {
		i := bytes.IndexByte(r.carry, '\n')
		if i < 0 {
			if len(r.carry) > inputfile.MaxLineBytes {
				r.tooLong()
			}
			return
		}
		if i > inputfile.MaxLineBytes {
			r.tooLong()
			return
		}
		r.take(r.carry[:i])
		r.carry = r.carry[i+1:]
	}
}

func (r *lineReader) tooLong() {
	r.err = core.Errorf(core.CodeInvalid, "dsh session log: line %d is longer than the limit of %d bytes", r.line+1, inputfile.MaxLineBytes)
	r.carry = nil
}

// flush takes a final line that has no newline.
func (r *lineReader) flush() {
	if len(bytes.TrimSpace(r.carry)) > 0 {
		r.take(r.carry)
	}
	r.carry = nil
}

func (r *lineReader) take(line []byte) {
	r.line++
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	if r.line == 1 || (len(r.log.Events) == 0 && r.log.Header.Type == "" && bytes.Contains(line, []byte(`"type":"session"`))) {
		var h Header
		if json.Unmarshal(line, &h) == nil && h.Type == "session" {
			r.log.Header = h
			return
		}
	}
	var ev Event
	if err := json.Unmarshal(line, &ev); err != nil || ev.Type == "" || (ev.Seq == nil && ev.Seq0 == nil) {
		msg := "not an event (no type and seq)"
		if err != nil {
			msg = err.Error()
		}
		r.log.Unreadable = append(r.log.Unreadable, BadLine{Line: r.line, Text: string(line), Err: msg})
		return
	}
	r.log.Events = append(r.log.Events, ev)
}

func (r *lineReader) result(path string) (*Log, error) {
	if r.err != nil {
		return nil, r.err
	}
	if r.log.Header.Type == "" && (len(r.log.Events) == 0 || len(r.log.Unreadable) > len(r.log.Events)) {
		return nil, core.Errorf(core.CodeInvalid, "%s is not a DSH session log (no session header, and %d of %d lines are events)",
			core.Quote(filepath.Base(path)), len(r.log.Events), len(r.log.Events)+len(r.log.Unreadable))
	}
	return r.log, nil
}

// Mapped is a session log mapped to entries.
type Mapped struct {
	Entries []core.NewEntry
	Title   string
	Model   string
	// Surface lists the seqs of the messages the model would see at the
	// end of the log, with every replace op applied.
	Surface []int64
	// StaleBrackets counts compaction brackets left open before a
	// session/end-seed (not reported).
	StaleBrackets int
}

// MapLog maps every event of log to entries, in order.
func MapLog(log *Log) Mapped {
	var out Mapped
	m := newMapper(log.Header.ID, func(e core.NewEntry) { out.Entries = append(out.Entries, e) })
	for _, ev := range log.Events {
		m.feed(ev)
	}
	for _, b := range log.Unreadable {
		out.Entries = append(out.Entries, core.NewEntry{Kind: core.KindHarnessEvent,
			NativeID: fmt.Sprintf("%s#line:%d", m.prefix(), b.Line),
			Payload:  core.Payload(map[string]any{"type": "dsh/unreadable-line", "line": b.Line, "text": b.Text, "error": b.Err})})
	}
	out.Title, out.Model, out.Surface, out.StaleBrackets = m.title, m.model, m.Surface(), m.stale
	return out
}

// Import reads a DSH session log (session.jsonl.zstd or plain .jsonl) into
// entries (core.Importer). On a corrupt frame it returns what was read with
// the error.
func (h *Host) Import(ctx context.Context, path string, progress func(done, total int64)) (core.ImportedSession, error) {
	if err := ctx.Err(); err != nil {
		return core.ImportedSession{}, core.E(core.CodeCancelled, "dsh import cancelled", errors.Join(core.ErrCancelled, err))
	}
	log, err := ReadLogContext(ctx, path, progress)
	if log == nil {
		return core.ImportedSession{}, err
	}
	mp := MapLog(log)
	is := core.ImportedSession{NativeID: log.Header.ID, Cwd: log.Header.Cwd, Model: mp.Model, Title: mp.Title, Entries: mp.Entries}
	return is, err
}
