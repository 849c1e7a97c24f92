package library

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/bridge-dev/bridge/core/jsonstream"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/inputfile"
	"github.com/bridge-dev/bridge/rpc/service/attach"
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
func (s *Library) Export(ctx context.Context, sessionID, format string) (string, error) {
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

func (s *Library) dumper() (core.Dumper, error) {
	d, ok := s.opts.Store.(core.Dumper)
	if !ok {
		return nil, core.Errorf(core.CodeUnsupported, "this record cannot export or restore whole sessions")
	}
	return d, nil
}

func (s *Library) exportJSON(ctx context.Context, sessionID string) (string, error) {
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
			c, err := s.opts.Images.Load(ctx, a)
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
// what it lacks. The document is read three times, never whole: first to
// check its format, version and every image (before anything is kept),
// then to keep its images, then to restore its entries and audit records
// one at a time in one transaction (Dumper.RestoreStream).
func (s *Library) importExport(ctx context.Context, path string) (Outcome, error) {
	dm, err := s.dumper()
	if err != nil {
		return Outcome{}, err
	}
	// Pass 1: the header, the session, and every image checked.
	var format string
	var version int
	var sess core.Session
	var haveSession bool
	err = walkExport(ctx, path, func(key string, dec *json.Decoder) error {
		switch key {
		case "format":
			return dec.Decode(&format)
		case "version":
			return dec.Decode(&version)
		case "session":
			haveSession = true
			return dec.Decode(&sess)
		case "attachments":
			return jsonstream.EachElement(dec, func() error {
				var a exportAttachment
				if err := dec.Decode(&a); err != nil {
					return err
				}
				return checkExportImage(path, a)
			})
		}
		return jsonstream.SkipValue(dec)
	})
	if err != nil {
		return Outcome{}, err
	}
	if format != exportFormatName {
		return Outcome{}, core.Errorf(core.CodeInvalid, "%s is not a Bridge session export (format %q)", path, format)
	}
	if version != exportVersion {
		return Outcome{}, core.Errorf(core.CodeUnsupported, "%s is export version %d; this Bridge reads version %d", path, version, exportVersion)
	}
	if !haveSession {
		return Outcome{}, core.Errorf(core.CodeInvalid, "%s is not a Bridge session export (no session)", path)
	}
	// Pass 2: the images are kept before the record changes.
	err = walkExport(ctx, path, func(key string, dec *json.Decoder) error {
		if key != "attachments" {
			return jsonstream.SkipValue(dec)
		}
		return jsonstream.EachElement(dec, func() error {
			var a exportAttachment
			if err := dec.Decode(&a); err != nil {
				return err
			}
			if _, err := s.opts.Images.Keep(ctx, core.Content{Type: "image", MediaType: a.MediaType, Data: a.Data}); err != nil {
				return core.E(core.CodeInvalid, fmt.Sprintf("%s: image %s", path, a.SHA256), err)
			}
			return nil
		})
	})
	if err != nil {
		return Outcome{}, err
	}
	// Pass 3: entries and audit records, streamed into one transaction.
	out := Outcome{SessionID: sess.ID}
	added, err := dm.RestoreStream(ctx, sess, func(r core.Restorer) error {
		return walkExport(ctx, path, func(key string, dec *json.Decoder) error {
			switch key {
			case "entries":
				return jsonstream.EachElement(dec, func() error {
					var e core.Entry
					if err := dec.Decode(&e); err != nil {
						return err
					}
					if e.Kind == core.KindContextCompacted {
						out.ContextCompacted++
					}
					return r.Entry(e)
				})
			case "audit":
				return jsonstream.EachElement(dec, func() error {
					var a exportAudit
					if err := dec.Decode(&a); err != nil {
						return err
					}
					return r.Audit(core.AuditRecord{Source: a.Source, Kind: a.Kind, Entity: a.Entity, Body: a.Body, Time: a.Time})
				})
			}
			return jsonstream.SkipValue(dec)
		})
	})
	if err != nil {
		return Outcome{}, err
	}
	out.Entries = added
	return out, nil
}

// checkExportImage checks one image of an export against its hash, size
// and media type.
func checkExportImage(path string, a exportAttachment) error {
	raw, err := base64.StdEncoding.DecodeString(a.Data)
	if err != nil {
		return core.E(core.CodeInvalid, fmt.Sprintf("%s: image %s is not base64", path, a.SHA256), err)
	}
	sum := sha256.Sum256(raw)
	if got := hex.EncodeToString(sum[:]); got != a.SHA256 || len(raw) != a.Bytes {
		return core.Errorf(core.CodeInvalid, "%s: image %s does not match its data (sha256 %s, %d bytes)", path, a.SHA256, got, len(raw))
	}
	if _, ok := attach.MediaTypes[a.MediaType]; !ok {
		return core.Errorf(core.CodeInvalid, "%s: image %s has media type %q", path, a.SHA256, a.MediaType)
	}
	return nil
}

// exportMembers are the members an export document may have.
var exportMembers = map[string]bool{"format": true, "version": true, "session": true, "entries": true,
	"audit": true, "attachments": true}

// walkExport reads the export document at path (a regular file within
// maxExportFile) as a stream of tokens, calling member with the decoder
// positioned at the value of each top-level member, which member must
// consume. A document that is not one JSON object of the format's members
// is refused as not an export (CodeInvalid); member's own *core.Error
// comes back as it is.
func walkExport(ctx context.Context, path string, member func(key string, dec *json.Decoder) error) error {
	f, err := inputfile.Open(ctx, path, "Bridge session export", maxExportFile)
	if err != nil {
		return err
	}
	defer f.Close()
	notExport := func(err error) error {
		var ce *core.Error
		if errors.As(err, &ce) {
			return err
		}
		return core.E(core.CodeInvalid, fmt.Sprintf("%s is not a Bridge session export", path), err)
	}
	dec := json.NewDecoder(bufio.NewReaderSize(f, 256<<10))
	dec.DisallowUnknownFields()
	if err := jsonstream.ExpectDelim(dec, '{'); err != nil {
		return notExport(err)
	}
	seen := map[string]bool{}
	for dec.More() {
		if err := ctx.Err(); err != nil {
			return core.E(core.CodeCancelled, "import", err)
		}
		tok, err := dec.Token()
		if err != nil {
			return notExport(err)
		}
		key, _ := tok.(string)
		if !exportMembers[key] {
			return notExport(fmt.Errorf("json: unknown field %.80q", key))
		}
		if seen[key] {
			return notExport(fmt.Errorf("json: member %q appears twice", key))
		}
		seen[key] = true
		if err := member(key, dec); err != nil {
			return notExport(err)
		}
	}
	if err := jsonstream.ExpectDelim(dec, '}'); err != nil {
		return notExport(err)
	}
	// One document per file: anything but white space after the object
	// (a second export appended, say) is refused, not ignored.
	if tok, err := dec.Token(); err != io.EOF {
		if err == nil {
			err = fmt.Errorf("%.40v", tok)
		}
		return notExport(fmt.Errorf("data after the JSON object: %w", err))
	}
	return nil
}
