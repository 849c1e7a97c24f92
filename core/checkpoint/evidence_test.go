package checkpoint

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/core"
)

func TestScanEvidence(t *testing.T) {
	tests := []struct {
		name          string
		build         func(b *branchBuilder)
		wantDecisions []string
		wantFiles     []string
		wantBoundary  bool
	}{
		{
			name: "no boundary: the whole branch",
			build: func(b *branchBuilder) {
				b.user("go")
				b.worker([]string{" use sqlite ", "wal mode"}, []string{"storage/db.go"})
				b.artifact("docs/plan.md")
				b.worker([]string{"use sqlite", ""}, []string{"storage/db.go", "storage/wal.go"})
			},
			wantDecisions: []string{"use sqlite", "wal mode"},
			wantFiles:     []string{"storage/db.go", "docs/plan.md", "storage/wal.go"},
		},
		{
			name: "since the last boundary only, previous checkpoint decisions carried",
			build: func(b *branchBuilder) {
				b.worker([]string{"old decision in old span"}, []string{"old.go"})
				b.artifact("old-artifact.md")
				b.commit(validCP("first", "carried decision"), "")
				b.worker([]string{"new decision"}, []string{"new.go"})
				b.artifact("new-artifact.md")
			},
			wantDecisions: []string{"carried decision", "new decision"},
			wantFiles:     []string{"new.go", "new-artifact.md"},
			wantBoundary:  true,
		},
		{
			name: "newest of two boundaries; later checkpoint entries count",
			build: func(b *branchBuilder) {
				b.commit(validCP("one", "d-one"), "")
				b.worker([]string{"between"}, nil)
				b.commit(validCP("two", "d-two"), "")
				b.add(core.KindCheckpoint, map[string]any{"summary": "loose", "decisions": []string{"d-loose", "d-two"}})
				b.worker(nil, []string{"z.go"})
			},
			wantDecisions: []string{"d-two", "d-loose"},
			wantFiles:     []string{"z.go"},
			wantBoundary:  true,
		},
		{
			name: "bad payloads and non-string items are skipped",
			build: func(b *branchBuilder) {
				b.add(core.KindWorkerResult, map[string]any{"status": "ok", "decisions": []any{1, "kept", nil}, "filesChanged": "not-a-list"})
				b.add(core.KindArtifactCreated, map[string]any{"path": 7})
				b.add(core.KindWorkerResult, map[string]any{"status": "ok", "decisions": []string{"also kept"}})
				b.user("user text is not evidence")
			},
			wantDecisions: []string{"kept", "also kept"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBranch()
			tt.build(b)
			ev := ScanEvidence(b.entries)
			if !reflect.DeepEqual(ev.Decisions, tt.wantDecisions) {
				t.Errorf("decisions = %q, want %q", ev.Decisions, tt.wantDecisions)
			}
			if !reflect.DeepEqual(ev.Files, tt.wantFiles) {
				t.Errorf("files = %q, want %q", ev.Files, tt.wantFiles)
			}
			if (ev.BoundaryEntryID != "") != tt.wantBoundary {
				t.Errorf("boundary = %q, want present %v", ev.BoundaryEntryID, tt.wantBoundary)
			}
		})
	}
}

func TestFillGaps(t *testing.T) {
	ev := Evidence{Decisions: []string{"Use SQLite in WAL mode", "keep ids as strings"}, Files: []string{"core/a.go", "./docs/b.md", "c.go"}}
	tests := []struct {
		name      string
		draft     Draft
		want      Draft
		wantRep   GapReport
		evidence  Evidence
		noEvident bool
	}{
		{
			name:    "reply covers everything: agent",
			draft:   Draft{Summary: "S", Decisions: []string{"use sqlite in WAL mode.", "Keep  ids as strings"}, FilesTouched: []string{"/repo/core/a.go", "docs/b.md", "c.go"}},
			want:    Draft{Summary: "S", Decisions: []string{"use sqlite in WAL mode.", "Keep  ids as strings"}, FilesTouched: []string{"/repo/core/a.go", "docs/b.md", "c.go"}},
			wantRep: GapReport{Decisions: 2, Files: 3, Provenance: ProvenanceAgent},
		},
		{
			name:    "missing decision and files appended: agent+controller",
			draft:   Draft{Summary: "S", Decisions: []string{"new idea"}, FilesTouched: []string{"core/a.go"}},
			want:    Draft{Summary: "S", Decisions: []string{"new idea", "Use SQLite in WAL mode", "keep ids as strings"}, FilesTouched: []string{"core/a.go", "./docs/b.md", "c.go"}},
			wantRep: GapReport{Decisions: 3, Files: 3, AppendedDecisions: 2, AppendedFiles: 2, Provenance: ProvenanceAgentController},
		},
		{
			name:    "only a file missing",
			draft:   Draft{Summary: "S", Decisions: []string{"use sqlite in wal mode", "keep ids as strings"}, FilesTouched: []string{"core/a.go", "docs/b.md"}},
			want:    Draft{Summary: "S", Decisions: []string{"use sqlite in wal mode", "keep ids as strings"}, FilesTouched: []string{"core/a.go", "docs/b.md", "c.go"}},
			wantRep: GapReport{Decisions: 2, Files: 3, AppendedFiles: 1, Provenance: ProvenanceAgentController},
		},
		{
			name:      "no evidence: agent, draft normalised",
			draft:     Draft{Summary: " S ", Decisions: []string{"a", "a", ""}},
			want:      Draft{Summary: "S", Decisions: []string{"a"}},
			wantRep:   GapReport{Decisions: 1, Provenance: ProvenanceAgent},
			noEvident: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := ev
			if tt.noEvident {
				e = Evidence{}
			}
			got, rep := FillGaps(tt.draft, e)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("draft\n got %#v\nwant %#v", got, tt.want)
			}
			if rep != tt.wantRep {
				t.Errorf("report got %+v want %+v", rep, tt.wantRep)
			}
		})
	}
}

func TestAssembleFillsBookkeeping(t *testing.T) {
	d := Draft{Summary: "S", Decisions: []string{"x"}}
	ev := Evidence{Decisions: []string{"y"}, Files: []string{"f.go"}}
	cp, rep := Assemble(d, ev, Bookkeeping{SourceAgent: "s1", FirstRetainedEntryID: "r1", TokensBefore: 900, Reason: ReasonPhaseBoundary})
	want := Checkpoint{SchemaVersion: 1, Summary: "S", Decisions: []string{"x", "y"}, FilesTouched: []string{"f.go"},
		SourceAgent: "s1", FirstRetainedEntryID: "r1", TokensBefore: 900, Reason: ReasonPhaseBoundary, Provenance: ProvenanceAgentController}
	if !reflect.DeepEqual(cp, want) {
		t.Fatalf("got %#v\nwant %#v", cp, want)
	}
	if err := cp.Validate(); err != nil {
		t.Fatal(err)
	}
	a := EvidenceAudit("s1", rep)
	if a.Kind != AuditEvidenceVerified || a.Entity != "s1" || !strings.Contains(string(a.Body), `"decisionCount":2`) || !strings.Contains(string(a.Body), `"fileCount":1`) {
		t.Errorf("audit = %+v %s", a, a.Body)
	}
}

func TestRequestPrompt(t *testing.T) {
	ev := Evidence{Decisions: []string{"use WAL", "multi\nline decision"}, Files: []string{"a.go", "b.go", "c.go"}}
	p := RequestPrompt(ReasonBeforeShutdown, ev, PromptOptions{Focus: "the storage layer", MaxFiles: 2})
	for _, want := range []string{`"summary"`, `"decisions"`, `"filesTouched"`, `"openWork"`, "- use WAL", "- multi line decision",
		"- a.go", "- b.go", "1 more files", "Focus on: the storage layer", "before shutdown"} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q:\n%s", want, p)
		}
	}
	if strings.Contains(p, "- c.go") {
		t.Errorf("prompt lists past MaxFiles:\n%s", p)
	}
	for _, forbidden := range []string{"schemaVersion", "sourceAgent", "firstRetainedEntryId", "tokensBefore", "provenance", `"reason"`} {
		if strings.Contains(p, forbidden) {
			t.Errorf("prompt asks for bookkeeping %q:\n%s", forbidden, p)
		}
	}
	if empty := RequestPrompt(ReasonManual, Evidence{}, PromptOptions{}); strings.Contains(empty, "The record shows") {
		t.Errorf("no evidence, yet the prompt lists some:\n%s", empty)
	}
}

func TestRepairPromptNamesTheProblem(t *testing.T) {
	tests := []struct {
		reply string
		want  string
	}{
		{"no json here", "no JSON object"},
		{`{"summary": "cut`, "cut off"},
		{`{"summary": ""}`, `"summary" was missing or empty`},
		{`{"summary": 3}`, "malformed"},
	}
	for _, tt := range tests {
		_, err := ParseReply(tt.reply)
		if err == nil {
			t.Fatalf("%q parsed", tt.reply)
		}
		p := RepairPrompt(err)
		if !strings.Contains(p, tt.want) || !strings.Contains(p, `"summary"`) {
			t.Errorf("repair prompt for %q lacks %q:\n%s", tt.reply, tt.want, p)
		}
	}
	if p := RepairPrompt(errors.New("timed out")); !strings.Contains(p, "timed out") {
		t.Errorf("other error not named: %s", p)
	}
}
