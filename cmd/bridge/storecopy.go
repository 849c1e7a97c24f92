package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bridge-dev/bridge/core"
)

// storeCopyResult is what `bridge store copy` did.
type storeCopyResult struct {
	From string `json:"from"`
	To   string `json:"to"`
	// Sessions copied (new, or grown since the last copy), entries added,
	// and sessions already present as they are in the source.
	Sessions int `json:"sessions"`
	Entries  int `json:"entries"`
	Skipped  int `json:"skipped"`
	Images   int `json:"images"`
}

// storeCmd is `bridge store copy --from SQLITE_OR_URL --to URL_OR_SQLITE`.
func (a *app) storeCmd(ctx context.Context, args []string) error {
	if len(args) > 0 && (args[0] == "--help" || args[0] == "-h" || args[0] == "-help") {
		c, _ := commandNamed("store copy")
		fmt.Fprint(a.stdout, helpText(c, nil))
		return errHelpShown
	}
	if len(args) == 0 || args[0] != "copy" {
		return usageError{"want `store copy --from SQLITE_OR_URL --to URL_OR_SQLITE`"}
	}
	fs, asJSON := a.flags("store copy")
	from := fs.String("from", "", "the record to copy: a PostgreSQL URL, a data directory or a SQLite database file")
	to := fs.String("to", "", "where to copy it: a PostgreSQL URL, a data directory or a SQLite database file (created when missing)")
	if _, err := a.parse(fs, args[1:]); err != nil {
		return err
	}
	if *from == "" || *to == "" {
		return usageError{"store copy needs --from and --to"}
	}
	src, err := copyEnd("--from", *from)
	if err != nil {
		return err
	}
	dst, err := copyEnd("--to", *to)
	if err != nil {
		return err
	}
	if src.kind == dst.kind && src.kind == "sqlite" && sameFile(src.path, dst.path) || src.kind == "postgres" && src.url == dst.url {
		return usageError{"store copy: --from and --to name the same record"}
	}
	res, err := copyStore(ctx, src, dst, func(line string) {
		if !*asJSON {
			fmt.Fprintln(a.stderr, line)
		}
	})
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(a.stdout, res)
	}
	fmt.Fprintf(a.stdout, "copied %d sessions (%d entries, %d images) from %s to %s; %d already there\n",
		res.Sessions, res.Entries, res.Images, res.From, res.To, res.Skipped)
	return nil
}

// copyEnd reads one end of a copy: a PostgreSQL URL, a data directory (its
// database) or a SQLite database file.
func copyEnd(flag, v string) (storeSpec, error) {
	if strings.Contains(v, "://") {
		spec, err := parseStore(v, flag, "")
		if err != nil {
			return storeSpec{}, usageError{userMessage(err)}
		}
		if spec.kind != "postgres" {
			return storeSpec{}, usageError{flag + ": want a PostgreSQL URL or a SQLite path"}
		}
		return spec, nil
	}
	path, err := filepath.Abs(v)
	if err != nil {
		return storeSpec{}, usageError{fmt.Sprintf("%s %s: %v", flag, core.Quote(v), err)}
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, DatabaseFile)
	} else if err != nil && flag == "--from" {
		return storeSpec{}, core.Errorf(core.CodeNotFound, "%s %s: no such record", flag, core.Quote(v))
	}
	return storeSpec{kind: "sqlite", path: path, from: flag}, nil
}

// sameFile reports whether two paths name one file.
func sameFile(a, b string) bool {
	if a == b {
		return true
	}
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// copyStore copies every session of src into dst losslessly (ids, parents,
// sequence numbers, times, audit records and images kept; the same form
// `export --format json` writes). Each session is written in one
// transaction, so an interrupted copy leaves whole sessions, and a session
// already in dst with the source's head is skipped without being read: a
// second run copies nothing new, and an interrupted one resumes where it
// stopped. A session in dst that the source has grown since gets the
// entries it lacks.
func copyStore(ctx context.Context, from, to storeSpec, progress func(string)) (storeCopyResult, error) {
	res := storeCopyResult{From: from.String(), To: to.String()}
	src, err := openSpec(ctx, from, -1)
	if err != nil {
		return res, err
	}
	defer src.Close()
	dst, err := openSpec(ctx, to, -1)
	if err != nil {
		return res, err
	}
	defer dst.Close()
	sd, ok1 := src.(core.Dumper)
	dd, ok2 := dst.(core.Dumper)
	if !ok1 || !ok2 {
		return res, core.Errorf(core.CodeUnsupported, "store copy: a store here cannot dump or restore whole sessions")
	}
	cursor := ""
	for {
		page, next, err := src.ListSessions(ctx, core.ListQuery{Cursor: cursor, Limit: 100, IncludeArchived: true})
		if err != nil {
			return res, fmt.Errorf("store copy: list the sessions of %s: %w", res.From, err)
		}
		for _, s := range page {
			if err := ctx.Err(); err != nil {
				return res, core.E(core.CodeCancelled, fmt.Sprintf("store copy: interrupted after %d sessions (run it again to resume)", res.Sessions), err)
			}
			if have, err := dst.GetSession(ctx, s.ID); err == nil && have.HeadID == s.HeadID && have.UpdatedAt.Equal(s.UpdatedAt) {
				res.Skipped++
				continue
			} else if err != nil && !errors.Is(err, core.ErrNotFound) {
				return res, fmt.Errorf("store copy: session %s in %s: %w", s.ID, res.To, err)
			}
			n, imgs, err := copySession(ctx, src, dst, sd, dd, s.ID)
			if err != nil {
				return res, fmt.Errorf("store copy: session %s: %w", s.ID, err)
			}
			res.Sessions++
			res.Entries += n
			res.Images += imgs
			if progress != nil {
				progress(fmt.Sprintf("session %s: %d entries", s.ID, n))
			}
		}
		if next == "" {
			return res, nil
		}
		cursor = next
	}
}

// copySession copies one session: its images first (so that no entry is
// ever without them), then its entries and audit records in one
// transaction. The session is read twice, a part at a time
// (Dumper.DumpStream), never whole: once for its head and images, then
// into the restore, up to the newest entry the first read saw (the head
// it copies names no later one, and entries are never removed).
func copySession(ctx context.Context, src, dst core.Store, sd, dd core.Dumper, id string) (entries, images int, err error) {
	var sess core.Session
	imgs := &imageCopier{ctx: ctx, src: src, dst: dst, seen: map[string]bool{}}
	if err := sd.DumpStream(ctx, id, func(s core.Session) error { sess = s; return nil }, imgs); err != nil {
		return 0, 0, err
	}
	n, err := dd.RestoreStream(ctx, sess, func(r core.Restorer) error {
		return sd.DumpStream(ctx, id, func(core.Session) error { return nil }, upTo{r, imgs.last})
	})
	return n, imgs.copied, err
}

// imageCopier is the core.Restorer of copySession's first read: it copies
// each image an entry refers to that dst lacks, and notes the newest seq.
type imageCopier struct {
	ctx      context.Context
	src, dst core.Store
	seen     map[string]bool
	copied   int
	last     int64
}

func (c *imageCopier) Entry(e core.Entry) error {
	c.last = max(c.last, e.Seq)
	for _, a := range imagesOf(e) {
		if c.seen[a] {
			continue
		}
		c.seen[a] = true
		if _, _, err := c.dst.GetAttachment(c.ctx, a); err == nil {
			continue
		}
		desc, data, err := c.src.GetAttachment(c.ctx, a)
		if err != nil {
			return fmt.Errorf("image %s of entry %s: %w", a, e.ID, err)
		}
		if err := c.dst.PutAttachment(c.ctx, desc, data); err != nil {
			return fmt.Errorf("image %s: %w", a, err)
		}
		c.copied++
	}
	return nil
}

func (c *imageCopier) Audit(core.AuditRecord) error { return nil }

// upTo hands a restore the entries up to seq last and every audit record.
type upTo struct {
	core.Restorer
	last int64
}

func (u upTo) Entry(e core.Entry) error {
	if e.Seq > u.last {
		return nil
	}
	return u.Restorer.Entry(e)
}

// imagesOf lists the hashes of the images a user.message entry refers to.
func imagesOf(e core.Entry) []string {
	if e.Kind != core.KindUserMessage {
		return nil
	}
	var p struct {
		Attachments []core.Attachment `json:"attachments"`
	}
	if json.Unmarshal(e.Payload, &p) != nil {
		return nil
	}
	var out []string
	for _, a := range p.Attachments {
		out = append(out, a.SHA256)
	}
	return out
}
