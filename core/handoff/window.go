package handoff

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/bridge-dev/bridge/core"
)

// WindowReader is the part of core.Store that ReadWindow needs.
type WindowReader interface {
	History(ctx context.Context, sessionID string, beforeSeq int64, maxMessages int) ([]core.Entry, bool, error)
	GetEntry(ctx context.Context, id string) (core.Entry, error)
}

// ReadWindow reads what Fold needs of a session without reading its whole
// branch: the newest MaxMessages messages of the active branch (with the
// entries between them) and, when no summary is among them, the session's
// latest checkpoint in front. moreBefore tells Fold that older messages
// exist (FoldOptions.MoreBefore).
func ReadWindow(ctx context.Context, r WindowReader, sess core.Session) (entries []core.Entry, moreBefore bool, err error) {
	entries, moreBefore, err = r.History(ctx, sess.ID, 0, MaxMessages)
	if err != nil {
		return nil, false, err
	}
	if sess.LatestCheckpointID == "" || hasSummary(entries) {
		return entries, moreBefore, nil
	}
	cp, err := r.GetEntry(ctx, sess.LatestCheckpointID)
	if err != nil {
		return nil, false, err
	}
	return append([]core.Entry{cp}, entries...), moreBefore, nil
}

func hasSummary(es []core.Entry) bool {
	for _, e := range es {
		switch e.Kind {
		case core.KindCheckpoint, core.KindContextCompacted:
			var p struct {
				Summary string `json:"summary"`
			}
			if json.Unmarshal(e.Payload, &p) == nil && strings.TrimSpace(p.Summary) != "" {
				return true
			}
		}
	}
	return false
}
