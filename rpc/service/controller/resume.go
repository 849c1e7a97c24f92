package controller

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
	"github.com/bridge-dev/bridge/rpc/service/checkpointer"
)

// BeforeNativeResume runs before a native resume of sess on h: when the
// attempt is risky (risky says why), a before_native_resume checkpoint,
// rebuilt from the record, so that a failed native resume falls back to a
// current projection. A suppressed checkpoint is no error; a failed one
// is, and the resume must not go on. It returns the session as the resume
// goes on with it (reloaded after a checkpoint, which moved its head).
func (c *Controller) BeforeNativeResume(ctx context.Context, h core.BridgeHost, sess core.Session) (core.Session, error) {
	why := c.risky(ctx, h, sess)
	if why == "" {
		return sess, nil
	}
	c.opts.Log.Log(3, fmt.Sprintf("session %s: native resume is risky (%s)", sess.ID, why))
	if _, err := c.raise(ctx, sess.ID, checkpoint.ReasonBeforeNativeResume); err != nil && checkpointer.Suppressed(err) == "" {
		return sess, err
	}
	return c.session(ctx, sess.ID)
}

// risky says why resuming sess natively is risky ("" when it is not): the
// harness program's version differs from the one that last ran the
// session, or the session's last boundary is more than
// RiskyResumeEntries entries behind its head.
func (c *Controller) risky(ctx context.Context, h core.BridgeHost, sess core.Session) string {
	if last := c.lastHarnessVersion(ctx, sess.ID); last != "" {
		if now := c.opts.Hosts.Capabilities(ctx, h).Version; now != "" && now != last {
			return fmt.Sprintf("the harness version changed from %q to %q", last, now)
		}
	}
	limit := c.opts.RiskyResumeEntries
	if limit == 0 {
		limit = DefaultRiskyResumeEntries
	}
	if limit < 0 || sess.HeadID == "" {
		return ""
	}
	head, err := c.opts.Store.GetEntry(ctx, sess.HeadID)
	if err != nil {
		return ""
	}
	var since int64 = head.Seq
	if sess.LatestCheckpointID != "" {
		if cp, err := c.opts.Store.GetEntry(ctx, sess.LatestCheckpointID); err == nil {
			since = head.Seq - cp.Seq
		}
	}
	if since > int64(limit) {
		return fmt.Sprintf("%d entries since the last boundary (more than %d)", since, limit)
	}
	return ""
}

// auditHarnessStarted is the audit kind recording which version of its
// harness program ran a session.
const auditHarnessStarted = "harness.started"

// harnessStarted is a harness.started audit record's body.
type harnessStarted struct {
	Harness string `json:"harness"`
	Version string `json:"version"`
}

// RecordHarnessVersion notes which version of the harness program runs a
// session now (an audit row, read before a native resume).
func (c *Controller) RecordHarnessVersion(ctx context.Context, h core.BridgeHost, sessionID string) {
	v := c.opts.Hosts.Capabilities(ctx, h).Version
	if v == "" {
		return
	}
	if err := c.opts.Store.AppendAudit(context.WithoutCancel(ctx), core.AuditRecord{Source: "session", Kind: auditHarnessStarted,
		Entity: sessionID, Body: core.Payload(harnessStarted{Harness: h.Harness(), Version: v})}); err != nil {
		c.opts.Log.Log(2, fmt.Sprintf("session %s: could not record the harness version: %v", sessionID, err))
	}
}

// lastHarnessVersion is the version of the harness program that last ran
// the session ("" when unknown).
func (c *Controller) lastHarnessVersion(ctx context.Context, sessionID string) string {
	rows, err := c.opts.Store.Audit(ctx, sessionID, auditHarnessStarted)
	if err != nil || len(rows) == 0 {
		return ""
	}
	var body harnessStarted
	_ = json.Unmarshal(rows[len(rows)-1].Body, &body)
	return body.Version
}
