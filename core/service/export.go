package service

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/internal/inputfile"
)

// ExportFormat names the form Export renders a session in.
const (
	ExportMarkdown = "markdown"
	ExportJSON     = "json"
)

// exportFormatName marks a lossless export document.
const exportFormatName = "bridge.session"

// exportVersion is the document version this Bridge writes and reads.
const exportVersion = 1

// maxExportFile bounds the export document `import --harness bridge` reads.
const maxExportFile = 1 << 30

// exportDoc is the lossless JSON form of a session.
type exportDoc struct {
	Format      string             `json:"format"`
	Version     int                `json:"version"`
	Session     core.Session       `json:"session"`
	Entries     []core.Entry       `json:"entries"`
	Audit       []exportAudit      `json:"audit"`
	Attachments []exportAttachment `json:"attachments"`
}

// exportAudit is an audit record without its row id (which belongs to the
// database it was written in).
type exportAudit struct {
	Source string          `json:"source"`
	Kind   string          `json:"kind"`
	Entity string          `json:"entity"`
	Body   json.RawMessage `json:"body"`
	Time   time.Time       `json:"time"`
}

// exportAttachment is a kept image, inline.
type exportAttachment struct {
	core.Attachment
	Data string `json:"data"` // base64
}

// Export renders a session (session/export): "markdown" (the default) for
// reading, "json" for a lossless copy that Import with harness "bridge"
// reads back to the same record.
func (s *Service) Export(ctx context.Context, sessionID, format string) (string, error) {
	if sessionID == "" {
		return "", core.Errorf(core.CodeInvalid, "sessionId is required")
	}
	switch format {
	case "", ExportMarkdown:
		return s.exportMarkdown(ctx, sessionID)
	case ExportJSON:
		return s.exportJSON(ctx, sessionID)
	}
	return "", core.Errorf(core.CodeInvalid, "export format %q is not \"markdown\" or \"json\"", format)
}

func (s *Service) dumper() (core.Dumper, error) {
	d, ok := s.opts.Store.(core.Dumper)
	if !ok {
		return nil, core.Errorf(core.CodeUnsupported, "this record cannot export or restore whole sessions")
	}
	return d, nil
}

func (s *Service) exportJSON(ctx context.Context, sessionID string) (string, error) {
	dm, err := s.dumper()
	if err != nil {
		return "", err
	}
	d, err := dm.Dump(ctx, sessionID)
	if err != nil {
		return "", err
	}
	doc := exportDoc{Format: exportFormatName, Version: exportVersion, Session: d.Session, Entries: d.Entries,
		Audit: make([]exportAudit, 0, len(d.Audit)), Attachments: []exportAttachment{}}
	for _, a := range d.Audit {
		doc.Audit = append(doc.Audit, exportAudit{Source: a.Source, Kind: a.Kind, Entity: a.Entity, Body: a.Body, Time: a.Time})
	}
	seen := map[string]bool{}
	for _, e := range d.Entries {
		for _, a := range entryAttachments(e) {
			if seen[a.SHA256] {
				continue
			}
			seen[a.SHA256] = true
			c, err := s.loadAttachment(ctx, a)
			if err != nil {
				return "", core.E(core.CodeNotFound, fmt.Sprintf("export %s: image %s of entry %s is not in the data directory", sessionID, a.SHA256, e.ID), err)
			}
			doc.Attachments = append(doc.Attachments, exportAttachment{Attachment: a, Data: c.Data})
		}
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return "", fmt.Errorf("export %s: %w", sessionID, err)
	}
	return string(b) + "\n", nil
}

// entryAttachments lists the images a user.message entry refers to.
func entryAttachments(e core.Entry) []core.Attachment {
	if e.Kind != core.KindUserMessage {
		return nil
	}
	var p struct {
		Attachments []core.Attachment `json:"attachments"`
	}
	if json.Unmarshal(e.Payload, &p) != nil {
		return nil
	}
	return p.Attachments
}

// importExport reads a document written by exportJSON and restores it: its
// images go back under the data directory (each checked against its hash)
// and its session is written verbatim. A session already present gets only
// what it lacks.
func (s *Service) importExport(ctx context.Context, path string) (ImportOutcome, error) {
	dm, err := s.dumper()
	if err != nil {
		return ImportOutcome{}, err
	}
	b, err := inputfile.ReadFile(ctx, path, "Bridge session export", maxExportFile)
	if err != nil {
		return ImportOutcome{}, err
	}
	var doc exportDoc
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return ImportOutcome{}, core.E(core.CodeInvalid, fmt.Sprintf("%s is not a Bridge session export", path), err)
	}
	if doc.Format != exportFormatName {
		return ImportOutcome{}, core.Errorf(core.CodeInvalid, "%s is not a Bridge session export (format %q)", path, doc.Format)
	}
	if doc.Version != exportVersion {
		return ImportOutcome{}, core.Errorf(core.CodeUnsupported, "%s is export version %d; this Bridge reads version %d", path, doc.Version, exportVersion)
	}
	// Every image is checked before any is kept, and before the record
	// changes.
	for _, a := range doc.Attachments {
		raw, err := base64.StdEncoding.DecodeString(a.Data)
		if err != nil {
			return ImportOutcome{}, core.E(core.CodeInvalid, fmt.Sprintf("%s: image %s is not base64", path, a.SHA256), err)
		}
		sum := sha256.Sum256(raw)
		if got := hex.EncodeToString(sum[:]); got != a.SHA256 || len(raw) != a.Bytes {
			return ImportOutcome{}, core.Errorf(core.CodeInvalid, "%s: image %s does not match its data (sha256 %s, %d bytes)", path, a.SHA256, got, len(raw))
		}
		if _, ok := allowedImageTypes[a.MediaType]; !ok {
			return ImportOutcome{}, core.Errorf(core.CodeInvalid, "%s: image %s has media type %q", path, a.SHA256, a.MediaType)
		}
	}
	for _, a := range doc.Attachments {
		if _, err := s.keepAttachment(ctx, core.Content{Type: "image", MediaType: a.MediaType, Data: a.Data}); err != nil {
			return ImportOutcome{}, core.E(core.CodeInvalid, fmt.Sprintf("%s: image %s", path, a.SHA256), err)
		}
	}
	audit := make([]core.AuditRecord, 0, len(doc.Audit))
	for _, a := range doc.Audit {
		audit = append(audit, core.AuditRecord{Source: a.Source, Kind: a.Kind, Entity: a.Entity, Body: a.Body, Time: a.Time})
	}
	added, err := dm.Restore(ctx, core.SessionDump{Session: doc.Session, Entries: doc.Entries, Audit: audit})
	if err != nil {
		return ImportOutcome{}, err
	}
	out := ImportOutcome{SessionID: doc.Session.ID, Entries: added}
	for _, e := range doc.Entries {
		if e.Kind == core.KindContextCompacted {
			out.ContextCompacted++
		}
	}
	return out, nil
}
