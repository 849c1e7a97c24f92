package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/rpc/rpctest"
	"github.com/bridge-dev/bridge/schema"
)

// gitIn runs git in dir for a test's own setup and checks.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=Test", "-c", "user.email=test@localhost", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// newRepo makes a repository with one committed file, README.md.
func newRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	gitIn(t, dir, "init", "-q")
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("committed\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, "add", "README.md")
	gitIn(t, dir, "commit", "-q", "-m", "first")
	return dir
}

// TestWorktreesAndDiff: two sessions with worktrees on one repository
// write the same file name without conflict and each diff shows only its
// own change; the session list shows the branches; a cwd in no repository
// is refused; a dirty repository's worktree starts from the commit (and
// says so); a session in the shared folder gets a diff that says others
// may have written there; a worktree deleted outside Bridge refuses
// prompts clearly, still diffs what was committed, and archives; archiving
// removes a worktree and keeps its branch, with the work left in it
// committed; `bridge diff --stat` prints the files. On both stores.
func TestWorktreesAndDiff(t *testing.T) { eachStore(t, testWorktreesAndDiff) }

func testWorktreesAndDiff(t *testing.T, st storeKind) {
	data := st.dataDir(t, nil)
	c := startBridge(t, data)
	c.initialize(nil)
	repo := newRepo(t)
	create := func(cwd string, worktree bool) (string, schema.SessionRepo) {
		t.Helper()
		r := rpctest.Must(c.Client, c.SessionCreate, schema.SessionCreateParams{Harness: "fake", Cwd: cwd, Worktree: worktree})
		if r.Repo == nil {
			t.Fatalf("session/create in %s: no repository recorded", cwd)
		}
		return r.SessionID, *r.Repo
	}
	diff := func(sid string) schema.SessionDiffResult {
		t.Helper()
		d := rpctest.Must(c.Client, c.SessionDiff, schema.SessionDiffParams{SessionID: sid})
		return d
	}
	head := gitIn(t, repo, "rev-parse", "HEAD")
	a, ra := create(repo, true)
	b, rb := create(repo, true)
	for sid, r := range map[string]schema.SessionRepo{a: ra, b: rb} {
		if r.Branch != "bridge/"+sid || r.BaseCommit != head || !strings.HasPrefix(r.Worktree, filepath.Join(data, "worktrees")) || r.SourceDirty {
			t.Fatalf("session %s repository %+v: want branch bridge/%s from %s under the data directory", sid, r, sid, head)
		}
	}
	// Each "agent" writes notes.txt in its own worktree.
	for sid, r := range map[string]schema.SessionRepo{a: ra, b: rb} {
		if err := os.WriteFile(filepath.Join(r.Worktree, "notes.txt"), []byte("written by "+sid+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for sid, other := range map[string]string{a: b, b: a} {
		d := diff(sid)
		if d.Shared || len(d.Files) != 1 || d.Files[0].Path != "notes.txt" || d.Files[0].Added != 1 || !d.Files[0].Untracked ||
			!strings.Contains(d.Diff, "+written by "+sid) || strings.Contains(d.Diff, other) {
			t.Fatalf("diff of %s: %+v; want its own notes.txt only", sid, d)
		}
	}
	if _, err := os.Stat(filepath.Join(repo, "notes.txt")); err == nil {
		t.Fatal("a worktree session wrote into the shared folder")
	}
	list := rpctest.Must(c.Client, c.SessionList, schema.SessionListParams{})
	branches := map[string]string{}
	for _, it := range list.Items {
		branches[it.SessionID] = it.Branch
	}
	if branches[a] != "bridge/"+a || branches[b] != "bridge/"+b {
		t.Fatalf("session/list branches %v", branches)
	}

	// A cwd in no repository is refused, never shared silently.
	e := rpctest.ErrorOf(c.SessionCreate(t.Context(), schema.SessionCreateParams{Harness: "fake", Cwd: t.TempDir(), Worktree: true}))
	if e == nil || e.DataCode() != "invalid" || !strings.Contains(e.Message, "not inside a git repository") || !strings.Contains(string(e.Data), `"cwd"`) {
		t.Fatalf("worktree in no repository: %+v", e)
	}

	// A dirty repository: the worktree starts from the commit, and says so.
	if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte("changed, not committed\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, rd := create(repo, true)
	got, err := os.ReadFile(filepath.Join(rd.Worktree, "README.md"))
	if err != nil || string(got) != "committed\n" || !rd.SourceDirty {
		t.Fatalf("worktree of a dirty repository: README %q, %v, sourceDirty %v", got, err, rd.SourceDirty)
	}
	// A session in the shared folder sees every change there, and is told.
	shared, rs := create(repo, false)
	if rs.Worktree != "" || rs.BaseCommit != head {
		t.Fatalf("shared session's repository %+v", rs)
	}
	d := diff(shared)
	if !d.Shared || !strings.Contains(d.Note, "shared folder") || len(d.Files) != 1 || d.Files[0].Path != "README.md" ||
		!strings.Contains(d.Diff, "+changed, not committed") {
		t.Fatalf("shared diff %+v", d)
	}
	out, err := exec.Command(binPath, "--data-dir", data, "diff", "--stat", a).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "+1 -0\tnotes.txt") {
		t.Fatalf("bridge diff --stat: %v\n%s", err, out)
	}

	// A worktree deleted outside Bridge: prompts are refused clearly, the
	// diff shows what was committed on the branch, archive tidies up.
	gitIn(t, ra.Worktree, "add", "notes.txt")
	gitIn(t, ra.Worktree, "commit", "-q", "-m", "notes")
	if err := os.RemoveAll(ra.Worktree); err != nil {
		t.Fatal(err)
	}
	e = rpctest.ErrorOf(c.SessionPrompt(t.Context(), schema.SessionPromptParams{SessionID: a, Content: prompt("hello")}))
	if e == nil || e.DataCode() != "not_found" || !strings.Contains(e.Message, "deleted outside Bridge") {
		t.Fatalf("prompt with the worktree deleted: %+v", e)
	}
	d = diff(a)
	if !strings.Contains(d.Note, "deleted outside Bridge") || len(d.Files) != 1 || !strings.Contains(d.Diff, "+written by "+a) {
		t.Fatalf("diff with the worktree deleted: %+v", d)
	}
	rpctest.Must(c.Client, c.SessionArchive, schema.SessionArchiveParams{SessionID: a})
	// Archive removes the worktree, keeps the branch and commits what was
	// left in it.
	rpctest.Must(c.Client, c.SessionArchive, schema.SessionArchiveParams{SessionID: b})
	if _, err := os.Stat(rb.Worktree); !os.IsNotExist(err) {
		t.Fatalf("archived session's worktree still there: %v", err)
	}
	if gitIn(t, repo, "show", "bridge/"+b+":notes.txt") != "written by "+b {
		t.Fatal("the archived session's uncommitted work is not on its branch")
	}
	wt := gitIn(t, repo, "worktree", "list", "--porcelain")
	if strings.Contains(wt, ra.Worktree) || strings.Contains(wt, rb.Worktree) {
		t.Fatalf("git still lists removed worktrees:\n%s", wt)
	}
	if gitIn(t, repo, "branch", "--list", "bridge/"+a) == "" {
		t.Fatal("the branch of the session whose worktree was deleted is gone")
	}
	var dj schema.SessionDiffResult
	raw, err := exec.Command(binPath, "--data-dir", data, "diff", "--json", b).Output()
	if err != nil || json.Unmarshal(raw, &dj) != nil || !strings.Contains(dj.Note, "archived") || !strings.Contains(dj.Diff, "+written by "+b) {
		t.Fatalf("bridge diff of an archived session: %v %+v", err, dj)
	}
	c.exit(true)
}
