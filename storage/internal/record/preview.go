package record

import (
	"encoding/json"
	"time"

	"github.com/bridge-dev/bridge/core"
)

// PreviewRow is a migration preview as both stores keep it: its target
// and extra as JSON text, its times as Nanos.
type PreviewRow struct {
	Target, Extra string
	CreatedAt     int64
}

// NewPreview checks a preview about to be saved (an id, a source
// session, not yet executed, extra JSON) and returns its row; a preview
// without a time is made at now.
func NewPreview(p core.Preview, now time.Time) (PreviewRow, error) {
	if p.ID == "" || p.SourceSessionID == "" {
		return PreviewRow{}, core.Errorf(core.CodeInvalid, "a preview needs an id and a source session")
	}
	if !p.ExecutedAt.IsZero() {
		return PreviewRow{}, core.Errorf(core.CodeInvalid, "a new preview is not executed")
	}
	target, err := json.Marshal(p.Target)
	if err != nil {
		return PreviewRow{}, core.E(core.CodeInvalid, "preview target", err)
	}
	row := PreviewRow{Target: string(target), Extra: string(p.Extra)}
	if row.Extra == "" {
		row.Extra = "{}"
	}
	if !json.Valid([]byte(row.Extra)) {
		return PreviewRow{}, core.Errorf(core.CodeInvalid, "preview %s: extra is not JSON", p.ID)
	}
	created := p.CreatedAt
	if created.IsZero() {
		created = now
	}
	row.CreatedAt = Nanos(created)
	return row, nil
}

// ReadPreview fills p from its row as read back (executed nil while it
// has not been executed); a target that is not JSON is CodeCorrupt.
func ReadPreview(p *core.Preview, row PreviewRow, executed *int64) error {
	if err := json.Unmarshal([]byte(row.Target), &p.Target); err != nil {
		return core.E(core.CodeCorrupt, "preview "+p.ID+": target is not JSON", err)
	}
	p.Extra = json.RawMessage(row.Extra)
	p.CreatedAt = Unix(row.CreatedAt)
	if executed != nil {
		p.ExecutedAt = Unix(*executed)
	}
	return nil
}
