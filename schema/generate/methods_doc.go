package generate

import (
	"fmt"
	"os"
	"strings"

	"github.com/bridge-dev/bridge/schema"
)

// The markers in docs/protocol.md between which MethodsMarkdown goes.
const (
	MethodsBegin = "<!-- methods:begin -->"
	MethodsEnd   = "<!-- methods:end -->"
)

// MethodsMarkdown is the method table of schema.Methods as a Markdown
// table: name, who sends it, request or notification, and its one-line doc.
func MethodsMarkdown() string {
	var b strings.Builder
	b.WriteString("| method | sent by | kind | what it does |\n|---|---|---|---|\n")
	for _, m := range schema.Methods() {
		from := map[schema.Direction]string{schema.ClientToServer: "client", schema.ServerToClient: "Bridge",
			schema.Both: "either"}[m.Direction]
		doc := strings.ReplaceAll(strings.TrimSpace(m.Doc), "|", `\|`)
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", m.Name, from, m.Kind, doc)
	}
	return b.String()
}

// SpliceMethods returns doc with the text between MethodsBegin and
// MethodsEnd replaced by MethodsMarkdown.
func SpliceMethods(doc string) (string, error) {
	head, rest, ok := strings.Cut(doc, MethodsBegin)
	_, tail, ok2 := strings.Cut(rest, MethodsEnd)
	if !ok || !ok2 {
		return "", fmt.Errorf("no %s … %s markers", MethodsBegin, MethodsEnd)
	}
	return head + MethodsBegin + "\n" + MethodsMarkdown() + MethodsEnd + tail, nil
}

// WriteMethodsDoc splices the method table into the Markdown file at path.
func WriteMethodsDoc(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := SpliceMethods(string(b))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if out == string(b) {
		return nil
	}
	return os.WriteFile(path, []byte(out), 0o644)
}
