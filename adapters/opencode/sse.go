package opencode

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
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

// readSSE reads server-sent events from r and calls fn with each message's
// data (multi-line data joined with "\n"). Comments and other fields are
// ignored. It returns when r ends or fails.
func readSSE(r io.Reader, fn func(data []byte)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	var buf bytes.Buffer
	have := false
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if have {
				fn(buf.Bytes())
				buf.Reset()
				have = false
			}
			continue
		}
		if line[0] == ':' {
			continue
		}
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			v = bytes.TrimPrefix(v, []byte(" "))
			if have {
				buf.WriteByte('\n')
			}
			buf.Write(v)
			have = true
		}
	}
	if have {
		fn(buf.Bytes())
	}
	return sc.Err()
}

// streamEvents subscribes to url (GET, SSE) and calls fn for every bus event
// until ctx ends, reconnecting after a dropped or failed stream. connected
// is called each time a stream opens (after a reconnect too), so callers can
// re-check state they may have missed. bad receives malformed messages; the
// stream goes on.
func streamEvents(ctx context.Context, client *http.Client, url string, fn func(event), connected func(), bad func(error)) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			bad(err)
			return
		}
		req.Header.Set("Accept", "text/event-stream")
		resp, err := client.Do(req)
		if err == nil && resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			err = fmt.Errorf("opencode: GET %s: HTTP %d", url, resp.StatusCode)
		}
		if err == nil {
			backoff = 100 * time.Millisecond
			if connected != nil {
				connected()
			}
			err = readSSE(resp.Body, func(data []byte) {
				ev, ok, perr := parseEventData(data)
				if perr != nil {
					bad(perr)
					return
				}
				if ok {
					fn(ev)
				}
			})
			resp.Body.Close()
		}
		if ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		if backoff < 2*time.Second {
			backoff *= 2
		}
	}
}
