// Package attach keeps the images a user sends (content blocks of type
// image) in the record, once per content, and reads them back as content
// blocks: for a prompt, an export, a migration's kickoff.
package attach

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bridge-dev/bridge/core"
)

// MediaTypes are the image types Bridge keeps and forwards, with the file
// extension images were once kept under in the data directory.
var MediaTypes = map[string]string{"image/png": ".png", "image/jpeg": ".jpg", "image/webp": ".webp", "image/gif": ".gif"}

// Images keeps images in a store (and reads those an older Bridge kept in
// DataDir/attachments).
type Images struct {
	Store   core.AttachmentStore
	DataDir string
}

// Keep checks an image block and keeps its bytes in the record, once per
// content.
func (s Images) Keep(ctx context.Context, c core.Content) (core.Attachment, error) {
	if _, ok := MediaTypes[strings.ToLower(c.MediaType)]; !ok {
		return core.Attachment{}, core.Errorf(core.CodeInvalid, "image mediaType %q is not one of image/png, image/jpeg, image/webp, image/gif", c.MediaType)
	}
	b, err := base64.StdEncoding.DecodeString(c.Data)
	if err != nil {
		return core.Attachment{}, core.E(core.CodeInvalid, "image data is not base64", err)
	}
	sum := sha256.Sum256(b)
	a := core.Attachment{SHA256: hex.EncodeToString(sum[:]), MediaType: strings.ToLower(c.MediaType), Bytes: len(b)}
	if err := s.Store.PutAttachment(ctx, a, b); err != nil {
		return core.Attachment{}, fmt.Errorf("keep the image: %w", err)
	}
	return a, nil
}

// Load reads a kept image back as a content block: from the record, or
// from the attachments folder where Bridge kept images before they moved
// into the record.
func (s Images) Load(ctx context.Context, a core.Attachment) (core.Content, error) {
	ext, ok := MediaTypes[a.MediaType]
	if !ok || len(a.SHA256) != 64 || strings.ContainsAny(a.SHA256, `/\.`) {
		return core.Content{}, fmt.Errorf("attachment %q (%s) is not one Bridge keeps", a.SHA256, a.MediaType)
	}
	_, b, err := s.Store.GetAttachment(ctx, a.SHA256)
	if core.ErrorCode(err) == core.CodeNotFound && s.DataDir != "" {
		var ferr error
		if b, ferr = os.ReadFile(filepath.Join(s.DataDir, "attachments", a.SHA256+ext)); ferr == nil {
			err = nil
		}
	}
	if err != nil {
		return core.Content{}, fmt.Errorf("attachment %s: %w", a.SHA256, err)
	}
	return core.Content{Type: "image", MediaType: a.MediaType, Data: base64.StdEncoding.EncodeToString(b)}, nil
}
