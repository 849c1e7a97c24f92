package service

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

// allowedImageTypes are the image types Bridge keeps and forwards.
var allowedImageTypes = map[string]string{"image/png": ".png", "image/jpeg": ".jpg", "image/webp": ".webp", "image/gif": ".gif"}

// keepAttachment checks an image block and keeps its bytes in the record,
// once per content.
func (s *Service) keepAttachment(ctx context.Context, c core.Content) (core.Attachment, error) {
	if _, ok := allowedImageTypes[strings.ToLower(c.MediaType)]; !ok {
		return core.Attachment{}, core.Errorf(core.CodeInvalid, "image mediaType %q is not one of image/png, image/jpeg, image/webp, image/gif", c.MediaType)
	}
	b, err := base64.StdEncoding.DecodeString(c.Data)
	if err != nil {
		return core.Attachment{}, core.E(core.CodeInvalid, "image data is not base64", err)
	}
	sum := sha256.Sum256(b)
	a := core.Attachment{SHA256: hex.EncodeToString(sum[:]), MediaType: strings.ToLower(c.MediaType), Bytes: len(b)}
	if err := s.opts.Store.PutAttachment(ctx, a, b); err != nil {
		return core.Attachment{}, fmt.Errorf("keep the image: %w", err)
	}
	return a, nil
}

// loadAttachment reads a kept image back as a content block: from the
// record, or from the attachments folder where Bridge kept images before
// they moved into the record.
func (s *Service) loadAttachment(ctx context.Context, a core.Attachment) (core.Content, error) {
	ext, ok := allowedImageTypes[a.MediaType]
	if !ok || len(a.SHA256) != 64 || strings.ContainsAny(a.SHA256, `/\.`) {
		return core.Content{}, fmt.Errorf("attachment %q (%s) is not one Bridge keeps", a.SHA256, a.MediaType)
	}
	_, b, err := s.opts.Store.GetAttachment(ctx, a.SHA256)
	if core.ErrorCode(err) == core.CodeNotFound && s.opts.DataDir != "" {
		var ferr error
		if b, ferr = os.ReadFile(filepath.Join(s.opts.DataDir, "attachments", a.SHA256+ext)); ferr == nil {
			err = nil
		}
	}
	if err != nil {
		return core.Content{}, fmt.Errorf("attachment %s: %w", a.SHA256, err)
	}
	return core.Content{Type: "image", MediaType: a.MediaType, Data: base64.StdEncoding.EncodeToString(b)}, nil
}

// checkImage refuses an image block Bridge cannot keep, before anything
// happens.
func checkImage(i int, c core.Content) error {
	if c.Data == "" || c.MediaType == "" {
		return invalidField(fmt.Sprintf("content[%d].data", i), "content[%d]: an image needs mediaType and data", i)
	}
	if _, ok := allowedImageTypes[strings.ToLower(c.MediaType)]; !ok {
		return invalidField(fmt.Sprintf("content[%d].mediaType", i), "content[%d]: image mediaType %q is not one of image/png, image/jpeg, image/webp, image/gif", i, c.MediaType)
	}
	if _, err := base64.StdEncoding.DecodeString(c.Data); err != nil {
		return core.E(core.CodeInvalid, fmt.Sprintf("content[%d]: image data is not base64", i), err)
	}
	return nil
}
