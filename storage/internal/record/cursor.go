package record

import (
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/bridge-dev/bridge/core"
)

// EncodeCursor is the session list's cursor after the session updated at
// upd (Nanos) with id id: the same form on both stores, so a client never
// needs to know which it talks to.
func EncodeCursor(upd int64, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(upd, 10) + "|" + id))
}

// DecodeCursor reads a cursor EncodeCursor made; anything else is a
// CodeInvalid error.
func DecodeCursor(c string) (int64, string, error) {
	bad := core.Errorf(core.CodeInvalid, "session list cursor %q is not valid", c)
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, "", bad
	}
	n, id, ok := strings.Cut(string(b), "|")
	upd, err := strconv.ParseInt(n, 10, 64)
	if !ok || err != nil || id == "" {
		return 0, "", bad
	}
	return upd, id, nil
}

// CutPage cuts a page of the session list read with one row more than
// limit: the page, and the cursor of the next ("" when it is the last).
func CutPage(out []core.Session, limit int) ([]core.Session, string) {
	if len(out) <= limit {
		return out, ""
	}
	out = out[:limit]
	last := out[limit-1]
	return out, EncodeCursor(Nanos(last.UpdatedAt), last.ID)
}
