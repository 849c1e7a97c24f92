package opencode

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// event is one OpenCode bus event: {"id":"evt_…","type":"…","properties":{…}}.
type event struct {
	ID         string          `json:"id"`
	Type       string          `json:"type"`
	Properties json.RawMessage `json:"properties"`
	// Directory is the project directory the global stream named ("" on
	// the per-directory /event stream).
	Directory string `json:"-"`
	// Raw is the whole payload as received.
	Raw json.RawMessage `json:"-"`
}

// sessionID returns properties.sessionID, or "" when the event is not about
// one session.
func (e event) sessionID() string {
	var p struct {
		SessionID string `json:"sessionID"`
	}
	if len(e.Properties) == 0 {
		return ""
	}
	_ = json.Unmarshal(e.Properties, &p)
	return p.SessionID
}

// parseEventData decodes the data of one SSE message from either stream:
// the bare event of GET /event, or the {directory, project, payload}
// envelope of GET /global/event. ok is false for messages that carry no bus
// event (sync records of the event-sourcing log).
func parseEventData(data []byte) (ev event, ok bool, err error) {
	var env struct {
		Directory string          `json:"directory"`
		Payload   json.RawMessage `json:"payload"`
		Type      string          `json:"type"`
	}
	if err := json.Unmarshal(data, &env); err != nil {
		return event{}, false, fmt.Errorf("opencode: event is not JSON: %w", err)
	}
	raw := json.RawMessage(data)
	if len(env.Payload) > 0 && env.Type == "" {
		raw = env.Payload
	}
	if err := json.Unmarshal(raw, &ev); err != nil {
		return event{}, false, fmt.Errorf("opencode: event payload is not an object: %w", err)
	}
	if ev.Type == "" {
		return event{}, false, fmt.Errorf("opencode: event has no type: %.200s", data)
	}
	if ev.Type == "sync" {
		return event{}, false, nil
	}
	ev.Directory = env.Directory
	ev.Raw = append(json.RawMessage(nil), raw...)
	return ev, true, nil
}

// sseMessage is one dispatched server-sent event.
type sseMessage struct {
	// Type is the event field, "message" when none was given.
	Type string
	// Data is the data fields joined with "\n".
	Data []byte
	// LastEventID is the last id field seen up to this event.
	LastEventID string
}

// maxSSELine bounds one line of the stream.
const maxSSELine = 64 << 20

// sseParser parses an event stream as the WHATWG HTML standard's
// "Interpreting an event stream" prescribes: lines end with CRLF, LF or a
// lone CR; a leading BOM is dropped; a line starting with a colon is a
// comment; a field without a colon has the empty value; one space after
// the colon is dropped; data, event, id (without NUL) and retry (digits
// only) are the fields; a blank line dispatches, unless no data field came;
// an event the stream ends in the middle of is discarded. The last event
// id and the retry time outlive a connection, for the reconnection.
type sseParser struct {
	// lastID is the last event ID; retry the reconnection time the server
	// asked for (0: none).
	lastID string
	retry  time.Duration

	data      bytes.Buffer
	eventType string
	idBuf     string
	line      []byte
	started   bool // the first line (which may start with a BOM) was read
	afterCR   bool // the previous chunk ended a line with CR
}

// read parses r until it ends or fails, calling fn for every event. A new
// connection starts a new stream: call read again with the next body.
func (p *sseParser) read(r io.Reader, fn func(sseMessage)) error {
	p.data.Reset()
	p.eventType, p.line, p.started, p.afterCR = "", p.line[:0], false, false
	p.idBuf = p.lastID
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		chunk := buf[:n]
		for len(chunk) > 0 {
			if p.afterCR {
				p.afterCR = false
				if chunk[0] == '\n' {
					chunk = chunk[1:]
					continue
				}
			}
			i := bytes.IndexAny(chunk, "\r\n")
			if i < 0 {
				p.line = append(p.line, chunk...)
				if len(p.line) > maxSSELine {
					return fmt.Errorf("opencode: event stream line longer than %d bytes", maxSSELine)
				}
				break
			}
			p.line = append(p.line, chunk[:i]...)
			p.afterCR = chunk[i] == '\r'
			chunk = chunk[i+1:]
			p.processLine(fn)
			p.line = p.line[:0]
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// processLine interprets p.line.
func (p *sseParser) processLine(fn func(sseMessage)) {
	line := p.line
	if !p.started {
		p.started = true
		line = bytes.TrimPrefix(line, []byte("\xEF\xBB\xBF"))
	}
	if len(line) == 0 {
		p.dispatch(fn)
		return
	}
	if line[0] == ':' {
		return
	}
	field, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		field, value = line[:i], line[i+1:]
		value = bytes.TrimPrefix(value, []byte(" "))
	}
	switch string(field) {
	case "event":
		p.eventType = string(value)
	case "data":
		p.data.Write(value)
		p.data.WriteByte('\n')
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			p.idBuf = string(value)
		}
	case "retry":
		if ms, err := strconv.ParseUint(string(value), 10, 32); err == nil && len(value) > 0 && value[0] != '+' {
			p.retry = time.Duration(ms) * time.Millisecond
		}
	}
}

// dispatch delivers the buffered event, if it has data.
func (p *sseParser) dispatch(fn func(sseMessage)) {
	p.lastID = p.idBuf
	if p.data.Len() == 0 {
		p.eventType = ""
		return
	}
	data := bytes.TrimSuffix(p.data.Bytes(), []byte("\n"))
	m := sseMessage{Type: p.eventType, Data: data, LastEventID: p.lastID}
	if m.Type == "" {
		m.Type = "message"
	}
	fn(m)
	p.data.Reset()
	p.eventType = ""
}

// readSSE reads server-sent events from r and calls fn with each event's
// data, until r ends or fails.
func readSSE(r io.Reader, fn func(data []byte)) error {
	var p sseParser
	return p.read(r, func(m sseMessage) { fn(m.Data) })
}

// Reconnection delays: the first wait (unless the server sent retry:),
// doubled after every failed attempt up to the cap, and jittered.
const (
	reconnectBase = 100 * time.Millisecond
	reconnectCap  = 5 * time.Second
)

// reconnectDelay is the wait before reconnection attempt n (0 after a
// stream that worked): base doubled n times, capped, then drawn uniformly
// from its upper half, so that many clients dropped at once (a restarted
// server) do not return in lockstep.
func reconnectDelay(base time.Duration, n int, rnd func(int64) int64) time.Duration {
	if base <= 0 {
		base = reconnectBase
	}
	d := base
	for range n {
		if d >= reconnectCap {
			break
		}
		d *= 2
	}
	d = min(d, max(reconnectCap, base))
	half := d / 2
	return half + time.Duration(rnd(int64(half)+1))
}

// streamEvents subscribes to url (GET, SSE) and calls fn for every bus event
// until ctx ends, reconnecting after a dropped or failed stream (with the
// Last-Event-ID of the last event, after the server's retry time or a
// jittered exponential backoff). connected is called each time a stream
// opens (after a reconnect too), so callers can re-check state they may
// have missed. bad receives malformed messages; the stream goes on.
func streamEvents(ctx context.Context, client *http.Client, url string, fn func(event), connected func(), bad func(error)) {
	var p sseParser
	failures := 0
	for ctx.Err() == nil {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			bad(err)
			return
		}
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Cache-Control", "no-cache")
		if p.lastID != "" {
			req.Header.Set("Last-Event-ID", p.lastID)
		}
		resp, err := client.Do(req)
		if err == nil && resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			err = fmt.Errorf("opencode: GET %s: HTTP %d", url, resp.StatusCode)
		}
		if err == nil {
			failures = 0
			if connected != nil {
				connected()
			}
			_ = p.read(resp.Body, func(m sseMessage) {
				ev, ok, perr := parseEventData(m.Data)
				if perr != nil {
					bad(perr)
					return
				}
				if ok {
					fn(ev)
				}
			})
			resp.Body.Close()
		} else {
			failures++
		}
		if ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(reconnectDelay(p.retry, failures, rand.Int64N)):
		}
	}
}
