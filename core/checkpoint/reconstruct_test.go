package checkpoint

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/core"
)

func TestParseGitStatus(t *testing.T) {
	text := "## main...origin/main [ahead 1]\n" +
		" M core/record.go\n" +
		"M  storage/db.go\n" +
		"A  new file.go\n" +
		"?? notes/todo.md\n" +
		"R  old/name.go -> new/name.go\n" +
		"R  \"with space.go\" -> \"renamed space.go\"\n" +
		"?? \"caf\\303\\251.txt\"\n" +
		"!! build/ignored.o\n" +
		"\r\n"
	got, err := ParseGitStatus(text)
	if err != nil {
		t.Fatal(err)
	}
	want := []GitFile{
		{Status: " M", Path: "core/record.go"},
		{Status: "M ", Path: "storage/db.go"},
		{Status: "A ", Path: "new file.go"},
		{Status: "??", Path: "notes/todo.md"},
		{Status: "R ", Path: "new/name.go", OrigPath: "old/name.go"},
		{Status: "R ", Path: "renamed space.go", OrigPath: "with space.go"},
		{Status: "??", Path: "café.txt"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}

	files, err := ParseGitStatus(" M ok.go\nfatal: not a git repository\n")
	if err == nil || core.ErrorCode(err) != core.CodeInvalid || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("err = %v, want an invalid error naming line 2", err)
	}
	if len(files) != 1 || files[0].Path != "ok.go" {
		t.Errorf("good lines lost: %+v", files)
	}
	if files, err := ParseGitStatus(""); err != nil || files != nil {
		t.Errorf("empty status: %v %v", files, err)
	}
}

func TestReconstruct(t *testing.T) {
	b := newBranch()
	b.user("first goal")
	b.commit(validCP("earlier work on the parser", "use a hand-written lexer"), "")
	b.user("add the storage layer")
	b.assistant("I will start with the schema.")
	b.worker([]string{"WAL mode"}, []string{"storage/schema.sql"})
	b.artifact("docs/storage.md")
	b.assistant("Schema done; moving on to migrations.")
	b.toolStart("t9") // running when the process died

	git := " M storage/schema.sql\n?? storage/migrate.go\n"
	r, err := Reconstruct(b.entries, git, Bookkeeping{SourceAgent: "s1", FirstRetainedEntryID: "r1", TokensBefore: 1234, Reason: ReasonPhaseBoundary})
	if err != nil {
		t.Fatal(err)
	}
	cp := r.Checkpoint
	if err := cp.Validate(); err != nil {
		t.Fatalf("invalid reconstruction: %v", err)
	}
	if cp.Provenance != ProvenanceReconstructed || cp.Reason != ReasonPhaseBoundary || cp.SourceAgent != "s1" ||
		cp.FirstRetainedEntryID != "r1" || cp.TokensBefore != 1234 {
		t.Errorf("bookkeeping = %+v", cp)
	}
	for _, want := range []string{"add the storage layer", "I will start with the schema.", "moving on to migrations",
		"earlier work on the parser", "Reconstructed by Bridge"} {
		if !strings.Contains(cp.Summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, cp.Summary)
		}
	}
	if strings.Contains(cp.Summary, "first goal") {
		t.Errorf("summary quotes a user message from before the boundary:\n%s", cp.Summary)
	}
	if want := []string{"use a hand-written lexer", "WAL mode"}; !reflect.DeepEqual(cp.Decisions, want) {
		t.Errorf("decisions = %q, want %q", cp.Decisions, want)
	}
	if want := []string{"storage/schema.sql", "docs/storage.md", "storage/migrate.go"}; !reflect.DeepEqual(cp.FilesTouched, want) {
		t.Errorf("files = %q, want %q", cp.FilesTouched, want)
	}
	if len(cp.OpenWork) != 2 || !strings.Contains(cp.OpenWork[0], "t9") || !strings.Contains(cp.OpenWork[1], "add the storage layer") {
		t.Errorf("open work = %q", cp.OpenWork)
	}
	if a := RecoveryAudit("s1", r); a.Kind != AuditRecoveryCompleted || !strings.Contains(string(a.Body), `"fileCount":3`) {
		t.Errorf("audit = %+v %s", a, a.Body)
	}

	// The reconstruction commits and restores like any other checkpoint.
	b.commit(cp, "")
	p, err := Project(b.entries, ProjectOptions{})
	if err != nil || p.Checkpoint.Provenance != ProvenanceReconstructed {
		t.Fatalf("projection of the reconstruction: %+v %v", p.Checkpoint, err)
	}
	if !strings.Contains(Render(p), "rebuilt by Bridge") {
		t.Errorf("render does not say the checkpoint was reconstructed")
	}
}

func TestReconstructMalformedStatusAndNothing(t *testing.T) {
	b := newBranch()
	b.user("goal")
	r, err := Reconstruct(b.entries, "garbage\n", Bookkeeping{Reason: ReasonPhaseBoundary})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "porcelain") {
		t.Errorf("warnings = %q", r.Warnings)
	}

	empty := newBranch()
	empty.commit(validCP("S"), "")
	_, err = Reconstruct(empty.entries, "", Bookkeeping{Reason: ReasonPhaseBoundary})
	if !errors.Is(err, ErrEmptySummary) || core.ErrorCode(err) != core.CodeSummary {
		t.Errorf("err = %v, want nothing to reconstruct", err)
	}
}
