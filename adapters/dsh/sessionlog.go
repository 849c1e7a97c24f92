package dsh

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/bridge-dev/bridge/adapters/internal/zstd"
	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/inputfile"
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
// same limit, and each line by inputfile.MaxLineBytes. It holds the whole
// log: imports stream it instead (Host.ImportStream).
func ReadLogContext(ctx context.Context, path string, progress func(done, total int64)) (*Log, error) {
	log := &Log{}
	err := streamLog(ctx, path, progress, logVisitor{
		header: func(h Header) { log.Header = h },
		event:  func(ev Event) error { log.Events = append(log.Events, ev); return nil },
		bad:    func(b BadLine) error { log.Unreadable = append(log.Unreadable, b); return nil },
	}, &log.Frames)
	if err != nil && core.ErrorCode(err) != core.CodeCorrupt {
		return nil, err
	}
	return log, err
}

// logVisitor receives what streamLog reads, line by line.
type logVisitor struct {
	header func(Header)
	event  func(Event) error
	bad    func(BadLine) error
}

// streamLog reads a DSH session log (zstd frames or plain JSONL) from disk
// a frame or a buffer at a time, handing each line to v. On a truncated or
// corrupt frame it returns a core.CodeCorrupt error naming the frame's byte
// offset, after v has seen every line before the frame. Input that is not
// a session log is refused at the end (CodeInvalid). frames counts the
// zstd frames decoded.
func streamLog(ctx context.Context, path string, progress func(done, total int64), v logVisitor, frames *int) error {
	f, err := inputfile.Open(ctx, path, "dsh session log", 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if progress == nil {
		progress = func(int64, int64) {}
	}
	total := f.Size()
	br := bufio.NewReaderSize(f, 256<<10)
	lr := &lineReader{v: v}
	if magic, _ := br.Peek(4); !bytes.Equal(magic, zstdMagic) {
		buf := make([]byte, 256<<10)
		var done int64
		for lr.err == nil {
			if err := ctx.Err(); err != nil {
				return core.E(core.CodeCancelled, "dsh import cancelled", errors.Join(core.ErrCancelled, err))
			}
			n, rerr := br.Read(buf)
			done += int64(n)
			lr.write(buf[:n])
			if rerr == io.EOF {
				break
			}
			if rerr != nil {
				return core.E(core.CodeHarness, "dsh session log: read", rerr)
			}
			progress(done, total)
		}
		lr.flush()
		progress(total, total)
		return lr.result(path)
	}
	var frame, buf []byte
	var decoded int64
	off := 0
	for {
		if err := ctx.Err(); err != nil {
			return core.E(core.CodeCancelled, "dsh import cancelled", errors.Join(core.ErrCancelled, err))
		}
		if _, err := br.Peek(1); err == io.EOF {
			break
		}
		var skippable bool
		var ferr error
		frame, skippable, ferr = readFrame(br, frame[:0])
		if ferr == nil && !skippable {
			buf, ferr = zstd.Decode(buf[:0], frame, inputfile.DefaultMaxBytes-decoded)
		}
		if errors.Is(ferr, zstd.ErrTooLarge) {
			return tooLarge(path)
		}
		if ferr != nil {
			lr.flush()
			if lr.err != nil {
				return lr.err
			}
			return &core.Error{Code: core.CodeCorrupt,
				Message: fmt.Sprintf("dsh session log %s: zstd frame %d at byte offset %d of %d is truncated or corrupt (%d events read before it are kept)",
					core.Quote(filepath.Base(path)), *frames+1, off, total, lr.events),
				Err: &FrameError{Path: path, Offset: off, Err: ferr}}
		}
		if !skippable {
			decoded += int64(len(buf))
			if decoded > inputfile.DefaultMaxBytes {
				return tooLarge(path)
			}
			*frames++
			lr.write(buf)
		}
		if lr.err != nil {
			return lr.err
		}
		off += len(frame)
		progress(int64(off), total)
	}
	lr.flush()
	return lr.result(path)
}

// tooLarge is the error for a log whose content is over the input limit.
func tooLarge(path string) error {
	return core.Errorf(core.CodeInvalid, "dsh session log %s decompresses to more than the limit of %d bytes",
		core.Quote(filepath.Base(path)), inputfile.DefaultMaxBytes)
}

// readFrame reads the zstd (or skippable) frame at the head of br into buf,
// walking its block headers without decompressing. A frame that is cut
// short is an error (io.ErrUnexpectedEOF wrapped with what was missing).
func readFrame(br *bufio.Reader, buf []byte) (frame []byte, skippable bool, err error) {
	need := func(n int, what string) error {
		start := len(buf)
		buf = append(buf, make([]byte, n)...)
		if _, err := io.ReadFull(br, buf[start:]); err != nil {
			buf = buf[:start]
			return fmt.Errorf("%s truncated: %w", what, io.ErrUnexpectedEOF)
		}
		return nil
	}
	if err := need(4, "frame header"); err != nil {
		return buf, false, err
	}
	if m := binary.LittleEndian.Uint32(buf); m&0xFFFFFFF0 == 0x184D2A50 {
		if err := need(4, "skippable frame"); err != nil {
			return buf, true, err
		}
		size := int(binary.LittleEndian.Uint32(buf[4:]))
		if size > inputfile.MaxLineBytes {
			return buf, true, fmt.Errorf("skippable frame of %d bytes is over the limit", size)
		}
		return buf, true, need(size, "skippable frame")
	}
	if !bytes.Equal(buf[:4], zstdMagic) {
		return buf, false, fmt.Errorf("no zstd frame magic (found % x)", buf[:4])
	}
	if err := need(1, "frame header"); err != nil {
		return buf, false, err
	}
	fhd := buf[4]
	single := fhd&0x20 != 0
	hdr := 0
	if !single {
		hdr++
	}
	hdr += []int{0, 1, 2, 4}[fhd&3]
	switch fhd >> 6 {
	case 0:
		if single {
			hdr++
		}
	case 1:
		hdr += 2
	case 2:
		hdr += 4
	case 3:
		hdr += 8
	}
	if err := need(hdr, "frame header"); err != nil {
		return buf, false, err
	}
	for {
		if err := need(3, "block header"); err != nil {
			return buf, false, err
		}
		b := buf[len(buf)-3:]
		h := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16
		size := int(h >> 3)
		switch (h >> 1) & 3 {
		case 1: // RLE: one byte repeated
			size = 1
		case 3:
			return buf, false, fmt.Errorf("reserved block type")
		}
		if err := need(size, "block"); err != nil {
			return buf, false, err
		}
		if len(buf) > inputfile.MaxLineBytes+(1<<20) {
			return buf, false, fmt.Errorf("frame of more than %d bytes", len(buf))
		}
		if h&1 != 0 {
			break
		}
	}
	if fhd&0x04 != 0 {
		if err := need(4, "content checksum"); err != nil {
			return buf, false, err
		}
	}
	return buf, false, nil
}

// lineReader splits decoded bytes into lines across frame boundaries and
// hands them to its visitor.
type lineReader struct {
	v          logVisitor
	carry      []byte
	line       int
	header     bool // a session header was read
	events     int
	unreadable int
	err        error // a line over inputfile.MaxLineBytes, or the visitor's
}

func (r *lineReader) write(b []byte) {
	if r.err != nil {
		return
	}
	for r.err == nil {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			r.carry = append(r.carry, b...)
			if len(r.carry) > inputfile.MaxLineBytes {
				r.tooLong()
			}
			return
		}
		line := b[:i]
		if len(r.carry) > 0 {
			r.carry = append(r.carry, line...)
			line = r.carry
		}
		if len(line) > inputfile.MaxLineBytes {
			r.tooLong()
			return
		}
		r.take(line)
		r.carry = r.carry[:0]
		b = b[i+1:]
	}
}

func (r *lineReader) tooLong() {
	r.err = core.Errorf(core.CodeInvalid, "dsh session log: line %d is longer than the limit of %d bytes", r.line+1, inputfile.MaxLineBytes)
	r.carry = nil
}

// flush takes a final line that has no newline.
func (r *lineReader) flush() {
	if r.err == nil && len(bytes.TrimSpace(r.carry)) > 0 {
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
	if r.line == 1 || (r.events == 0 && !r.header && bytes.Contains(line, []byte(`"type":"session"`))) {
		var h Header
		if json.Unmarshal(line, &h) == nil && h.Type == "session" {
			r.header = true
			r.v.header(h)
			return
		}
	}
	var ev Event
	if err := json.Unmarshal(line, &ev); err != nil || ev.Type == "" || (ev.Seq == nil && ev.Seq0 == nil) {
		msg := "not an event (no type and seq)"
		if err != nil {
			msg = err.Error()
		}
		r.unreadable++
		r.err = r.v.bad(BadLine{Line: r.line, Text: string(line), Err: msg})
		return
	}
	r.events++
	r.err = r.v.event(ev)
}

func (r *lineReader) result(path string) error {
	if r.err != nil {
		return r.err
	}
	if !r.header && (r.events == 0 || r.unreadable > r.events) {
		return core.Errorf(core.CodeInvalid, "%s is not a DSH session log (no session header, and %d of %d lines are events)",
			core.Quote(filepath.Base(path)), r.events, r.events+r.unreadable)
	}
	return nil
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

// MapLog maps every event of log to entries, in order, each at its
// event's time.
func MapLog(log *Log) Mapped {
	var out Mapped
	b := core.ImportBatcher{Sink: func(core.ImportedSession) error { return nil }}
	b.Stamp(msTime(log.Header.CreatedAt))
	m := newMapper(log.Header.ID, func(e core.NewEntry) {
		if e.At.IsZero() {
			e.At = b.At
		}
		out.Entries = append(out.Entries, e)
	})
	for _, ev := range log.Events {
		b.Stamp(msTime(ev.Time))
		b.Stamp(msTime(ev.Time0))
		m.feed(ev)
	}
	for _, b := range log.Unreadable {
		m.emitBad(b)
	}
	out.Title, out.Model, out.Surface, out.StaleBrackets = m.title, m.model, m.Surface(), m.stale
	return out
}

// ImportStream reads a DSH session log (session.jsonl.zstd or plain .jsonl)
// a frame at a time and hands its entries to sink in batches
// (core.Importer). Lines that are not events are kept as harness.event
// entries where they occur. A corrupt frame fails the import after sink
// was given what was read before it (which the caller then discards).
func (h *Host) ImportStream(ctx context.Context, path string, sink core.ImportSink, progress func(done, total int64)) (core.ImportedSession, error) {
	if err := ctx.Err(); err != nil {
		return core.ImportedSession{}, core.E(core.CodeCancelled, "dsh import cancelled", errors.Join(core.ErrCancelled, err))
	}
	b := &core.ImportBatcher{Sink: sink}
	var m *mapper
	var held []BadLine // lines read before the session header or first event
	start := func() error {
		m = newMapper(b.Head.NativeID, func(e core.NewEntry) { _ = b.Add(e) })
		for _, l := range held {
			m.emitBad(l)
		}
		held = nil
		return b.Err()
	}
	var frames int
	err := streamLog(ctx, path, progress, logVisitor{
		header: func(hd Header) {
			if m == nil {
				b.Head.NativeID, b.Head.Cwd = hd.ID, hd.Cwd
				b.Stamp(msTime(hd.CreatedAt))
			}
		},
		event: func(ev Event) error {
			if m == nil {
				if err := start(); err != nil {
					return err
				}
			}
			// Entries are recorded at DSH's own event times (a batch of text
			// chunks at its first chunk's).
			b.Stamp(msTime(ev.Time))
			b.Stamp(msTime(ev.Time0))
			m.feed(ev)
			b.Head.Title, b.Head.Model = m.title, m.model
			return b.Err()
		},
		bad: func(l BadLine) error {
			if m == nil && len(held) < core.ImportBatch {
				held = append(held, l)
				return nil
			}
			if m == nil {
				if err := start(); err != nil {
					return err
				}
			}
			m.emitBad(l)
			return b.Err()
		},
	}, &frames)
	if (err == nil || core.ErrorCode(err) == core.CodeCorrupt) && m == nil {
		if serr := start(); serr != nil {
			return core.ImportedSession{}, serr
		}
	}
	if err == nil || core.ErrorCode(err) == core.CodeCorrupt {
		// On a corrupt frame, what was read before it is handed out too
		// (CollectImport returns it with the error; an import discards it).
		if ferr := b.Flush(); ferr != nil {
			return core.ImportedSession{}, ferr
		}
	}
	if err != nil {
		return b.Head, err
	}
	return b.Head, nil
}

// msTime is DSH's time in Unix milliseconds (zero: none).
func msTime(ms int64) time.Time {
	if ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// emitBad keeps a line that was not an event as a harness.event entry.
func (m *mapper) emitBad(b BadLine) {
	m.emit(core.NewEntry{Kind: core.KindHarnessEvent,
		NativeID: fmt.Sprintf("%s#line:%d", m.prefix(), b.Line),
		Payload:  core.Payload(unreadableLine{Type: "dsh/unreadable-line", Line: b.Line, Text: b.Text, Error: b.Err})})
}

// Import reads a whole session log into memory (core.CollectImport): for
// tests; imports stream.
func (h *Host) Import(ctx context.Context, path string, progress func(done, total int64)) (core.ImportedSession, error) {
	return core.CollectImport(ctx, h, path, progress)
}

// FrameError is the cause of a session log refused as corrupt: the zstd
// frame at byte Offset of the file at Path did not decode. Its text is
// the decoder's.
type FrameError struct {
	Path   string
	Offset int
	Err    error
}

func (e *FrameError) Error() string { return e.Err.Error() }

// Unwrap returns the decoder's error.
func (e *FrameError) Unwrap() error { return e.Err }
