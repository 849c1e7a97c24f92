package generate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/invopop/jsonschema"

	"github.com/bridge-dev/bridge/core"
	"github.com/bridge-dev/bridge/core/checkpoint"
	"github.com/bridge-dev/bridge/schema"
)

// Banner and BundleFile are schema's.
const (
	Banner     = schema.Banner
	BundleFile = schema.BundleFile
)

// methodsKeyword is the bundle's member holding the method table.
const methodsKeyword = "x-bridge-methods"

// typeSources are the schema package's type files, whose doc comments
// become schema descriptions. The generator runs from the source tree (go
// generate, tests), so it reads them next to this file.
var typeSources = os.DirFS(filepath.Join(sourceDir(), ".."))

// payloadSources are the packages declaring entry payload types (core,
// core/checkpoint), whose doc comments describe the payload definitions.
var payloadSources = []struct {
	dir     fs.FS
	pkgPath string
}{
	{os.DirFS(filepath.Join(sourceDir(), "..", "..", "core")), reflect.TypeFor[core.Entry]().PkgPath()},
	{os.DirFS(filepath.Join(sourceDir(), "..", "..", "core", "checkpoint")), reflect.TypeFor[checkpoint.Checkpoint]().PkgPath()},
}

// sourceDir is the folder holding this file.
func sourceDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// extraTypes are contract types reachable only through a union, or used
// outside any method (schema.ErrorData).
var extraTypes = []any{schema.ErrorData{}, schema.TextContent{}, schema.ImageContent{},
	schema.WorkDoneProgressBegin{}, schema.WorkDoneProgressReport{}, schema.WorkDoneProgressEnd{}}

var pkgPath = reflect.TypeOf(schema.Entry{}).PkgPath()

// docComments maps "pkg.Type" and "pkg.Type.Field" to their doc comments.
var docComments = sync.OnceValues(func() (map[string]string, error) {
	out := map[string]string{}
	files, err := fs.Glob(typeSources, "types_*.go")
	if err != nil {
		return nil, fmt.Errorf("schema: read embedded sources: %w", err)
	}
	fset := token.NewFileSet()
	read := func(dir fs.FS, f, pkg string) error {
		src, err := fs.ReadFile(dir, f)
		if err != nil {
			return fmt.Errorf("schema: read %s: %w", f, err)
		}
		file, err := parser.ParseFile(fset, f, src, parser.ParseComments)
		if err != nil {
			return fmt.Errorf("schema: parse %s: %w", f, err)
		}
		collectDocs(file, pkg, out)
		return nil
	}
	for _, f := range files {
		if err := read(typeSources, f, pkgPath); err != nil {
			return nil, err
		}
	}
	for _, src := range payloadSources {
		files, err := fs.Glob(src.dir, "*.go")
		if err != nil {
			return nil, fmt.Errorf("schema: read %s: %w", src.pkgPath, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			if err := read(src.dir, f, src.pkgPath); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
})

func collectDocs(file *ast.File, pkgPath string, out map[string]string) {
	for _, d := range file.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, spec := range gd.Specs {
			ts := spec.(*ast.TypeSpec)
			doc := ts.Doc
			if doc == nil && len(gd.Specs) == 1 {
				doc = gd.Doc
			}
			key := pkgPath + "." + ts.Name.Name
			if txt := oneLine(doc.Text()); txt != "" {
				out[key] = txt
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				continue
			}
			for _, fld := range st.Fields.List {
				txt := fld.Doc.Text()
				if txt == "" {
					txt = fld.Comment.Text()
				}
				for _, n := range fld.Names {
					if t := oneLine(txt); t != "" {
						out[key+"."+n.Name] = t
					}
				}
			}
		}
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// typeName is the definition name of v's type.
func typeName(v any) string { return defName(reflect.TypeOf(v)) }

// defName is t's definition name: its Go name, or for a type declared
// outside schema that schema aliases under another name, that name.
func defName(t reflect.Type) string {
	if n, ok := aliasNames[t]; ok {
		return n
	}
	return t.Name()
}

// aliasNames are the types declared outside schema that schema aliases
// under a name of its own (type ErrorCode = core.Code): the definition
// takes schema's name, and schema's doc comment describes it.
var aliasNames = map[reflect.Type]string{
	reflect.TypeFor[core.Code]():              "ErrorCode",
	reflect.TypeFor[checkpoint.Reason]():      "CheckpointReason",
	reflect.TypeFor[checkpoint.Suppression](): "CheckpointSuppression",
	// core.ApprovalOptionKind is ACP's PermissionOptionKind.
	reflect.TypeFor[core.ApprovalOptionKind](): "PermissionOptionKind",
}

// contractTypes lists every root type once, in table order.
func contractTypes() []reflect.Type {
	seen := map[reflect.Type]bool{}
	var out []reflect.Type
	add := func(v any) {
		if v == nil {
			return
		}
		t := reflect.TypeOf(v)
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	for _, m := range schema.Methods() {
		add(m.Params)
		add(m.Result)
	}
	for _, v := range extraTypes {
		add(v)
	}
	return out
}

// definitions reflects every contract type into one map of definitions,
// each a generic JSON value with a title and a description.
func definitions() (map[string]any, error) {
	comments, err := docComments()
	if err != nil {
		return nil, err
	}
	custom := map[string]*jsonschema.Schema{}
	kinds := schema.EntryKinds()
	payloadNames := map[reflect.Type]string{}
	for _, k := range kinds {
		payloadNames[reflect.TypeOf(k.Payload)] = PayloadName(k.Kind)
	}
	r := &jsonschema.Reflector{AllowAdditionalProperties: true, Anonymous: true, CommentMap: comments,
		Namer: func(t reflect.Type) string {
			if n, ok := payloadNames[t]; ok {
				return n
			}
			return aliasNames[t]
		},
		Mapper: func(t reflect.Type) *jsonschema.Schema {
			if name, ok := sameAs[t]; ok {
				return &jsonschema.Schema{Ref: "#/$defs/" + name}
			}
			sh, ok := schema.Shapes()[t]
			if !ok {
				return nil
			}
			custom[defName(t)] = shapeSchema(sh)
			return &jsonschema.Schema{Ref: "#/$defs/" + defName(t)}
		}}
	defs := map[string]any{}
	roots := contractTypes()
	for _, k := range kinds {
		roots = append(roots, reflect.TypeOf(k.Payload))
	}
	for _, t := range roots {
		if t.Kind() != reflect.Struct {
			return nil, fmt.Errorf("schema: %s: params, results and payloads must be structs", t)
		}
		s := r.ReflectFromType(t)
		for name, def := range s.Definitions {
			v, err := toGeneric(def)
			if err != nil {
				return nil, fmt.Errorf("schema: %s: %w", name, err)
			}
			if old, ok := defs[name]; ok && !reflect.DeepEqual(old, v) {
				return nil, fmt.Errorf("schema: two different types are named %s", name)
			}
			defs[name] = v
		}
	}
	for name, sch := range custom {
		v, err := toGeneric(sch)
		if err != nil {
			return nil, fmt.Errorf("schema: %s: %w", name, err)
		}
		defs[name] = v
	}
	for name, v := range defs {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("schema: definition %s is not an object", name)
		}
		m["title"] = name
		// schema's doc comment of the name describes the definition, also
		// when schema aliases a type declared elsewhere (type Gauge =
		// core.Gauge): the contract's words, not the Go package's.
		if d := comments[pkgPath+"."+name]; d != "" {
			m["description"] = d
		}
		if props, ok := m["properties"].(map[string]any); ok {
			for _, p := range props {
				hoistNullableDescription(p)
			}
		}
		if ap, ok := m["additionalProperties"].(bool); ok && !ap {
			return nil, fmt.Errorf("schema: %s must allow additional properties", name)
		}
	}
	if err := entryUnion(defs, kinds); err != nil {
		return nil, err
	}
	return defs, nil
}

// sameAs maps types declared outside schema to the contract definition
// they are the same as (a payload member of such a type refers to it).
var sameAs = map[reflect.Type]string{
	reflect.TypeFor[core.ApprovalOption](): "PermissionOption",
}

// PayloadName is the definition name of kind's payload: "tool.started"
// is ToolStartedPayload, "session.resume_failed" SessionResumeFailedPayload.
func PayloadName(kind core.Kind) string {
	var b strings.Builder
	for _, w := range strings.FieldsFunc(string(kind), func(r rune) bool { return r == '.' || r == '_' }) {
		b.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	return b.String() + "Payload"
}

// entryBranch is the branch of Entry's union for one kind.
type entryBranch struct {
	Properties struct {
		Kind struct {
			Const string `json:"const"`
		} `json:"kind"`
		Payload struct {
			Ref string `json:"$ref"`
		} `json:"payload"`
	} `json:"properties"`
	Required []string `json:"required"`
}

// entryUnion makes Entry the union of the entry kinds, discriminated by
// kind: each branch pins kind with a const and gives payload its kind's
// definition, whose required members are the kind's (core.RequiredFields).
func entryUnion(defs map[string]any, kinds []schema.EntryKind) error {
	entry, ok := defs["Entry"].(map[string]any)
	if !ok {
		return fmt.Errorf("schema: no Entry definition")
	}
	var branches []any
	for _, k := range kinds {
		name := PayloadName(k.Kind)
		def, ok := defs[name].(map[string]any)
		if !ok {
			return fmt.Errorf("schema: entry kind %s: no definition %s", k.Kind, name)
		}
		props, _ := def["properties"].(map[string]any)
		req := make([]any, 0, len(k.Required))
		for _, f := range k.Required {
			if _, ok := props[f]; !ok {
				return fmt.Errorf("schema: entry kind %s: required member %q is not a member of %s", k.Kind, f, name)
			}
			req = append(req, f)
		}
		if len(req) > 0 {
			def["required"] = req
		} else {
			delete(def, "required")
		}
		var b entryBranch
		b.Properties.Kind.Const = string(k.Kind)
		b.Properties.Payload.Ref = "#/$defs/" + name
		b.Required = []string{"kind", "payload"}
		v, err := toGeneric(b)
		if err != nil {
			return fmt.Errorf("schema: entry kind %s: %w", k.Kind, err)
		}
		branches = append(branches, v)
	}
	entry["oneOf"] = branches
	return nil
}

// shapeSchema is the schema of a type's schema.Shape.
func shapeSchema(sh schema.Shape) *jsonschema.Schema {
	switch {
	case sh.IntOrString:
		return &jsonschema.Schema{OneOf: []*jsonschema.Schema{{Type: "integer"}, {Type: "string"}}}
	case len(sh.OneOf) > 0:
		s := &jsonschema.Schema{}
		for _, n := range sh.OneOf {
			s.OneOf = append(s.OneOf, &jsonschema.Schema{Ref: "#/$defs/" + n})
		}
		return s
	}
	return &jsonschema.Schema{Type: sh.Type, Enum: sh.Enum}
}

// hoistNullableDescription moves the description of a nullable property
// ({oneOf: [T, {type: null}]}) from T up to the property, where readers and
// generators look for it.
func hoistNullableDescription(p any) {
	m, ok := p.(map[string]any)
	if !ok {
		return
	}
	oneOf, ok := m["oneOf"].([]any)
	if !ok || len(oneOf) != 2 {
		return
	}
	if n, ok := oneOf[1].(map[string]any); !ok || n["type"] != "null" {
		return
	}
	first, ok := oneOf[0].(map[string]any)
	if !ok {
		return
	}
	if d, ok := first["description"]; ok {
		if _, has := m["description"]; !has {
			m["description"] = d
		}
		delete(first, "description")
	}
}

func toGeneric(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var out any
	if err := d.Decode(&out); err != nil {
		return nil, err
	}
	return out, nil
}

// refsOf collects the definition names that v refers to.
func refsOf(v any, into map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && k == "$ref" {
				into[strings.TrimPrefix(s, "#/$defs/")] = true
				continue
			}
			refsOf(e, into)
		}
	case []any:
		for _, e := range x {
			refsOf(e, into)
		}
	}
}

// closure returns the definitions name needs, name excluded.
func closure(defs map[string]any, name string) map[string]any {
	need := map[string]bool{}
	queue := []string{name}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		refs := map[string]bool{}
		refsOf(defs[n], refs)
		for r := range refs {
			if !need[r] && r != name {
				need[r] = true
				queue = append(queue, r)
			}
		}
	}
	out := map[string]any{}
	for n := range need {
		out[n] = defs[n]
	}
	return out
}

// FileName returns the base name of the schema file for method name's
// params or result (part is "params" or "result"): "session/create" becomes
// "session_create.params.schema.json", "$/progress" "progress.params…".
func FileName(name, part string) string {
	s := strings.TrimPrefix(name, "$/")
	s = strings.ReplaceAll(s, "/", "_")
	return s + "." + part + ".schema.json"
}

// Files returns every generated schema file by base name: one per method's
// params and result type, one per notification's params, and the bundle
// BundleFile with every definition and the method table.
func Files() (map[string][]byte, error) {
	defs, err := definitions()
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	put := func(name string, v any) error {
		if _, dup := files[name]; dup {
			return fmt.Errorf("schema: two methods map to file %s", name)
		}
		b, err := encode(v)
		if err != nil {
			return fmt.Errorf("schema: encode %s: %w", name, err)
		}
		files[name] = b
		return nil
	}
	single := func(typ string) map[string]any {
		root := map[string]any{}
		for k, v := range defs[typ].(map[string]any) {
			root[k] = v
		}
		root["$schema"] = jsonschema.Version
		root["$comment"] = Banner
		if deps := closure(defs, typ); len(deps) > 0 {
			root["$defs"] = deps
		}
		return root
	}
	var table []methodRow
	for _, m := range schema.Methods() {
		row := methodRow{Name: m.Name, Direction: m.Direction.String(),
			Kind: m.Kind.String(), Doc: m.Doc, Capability: m.Capability}
		if m.Params != nil {
			row.Params = typeName(m.Params)
			if err := put(FileName(m.Name, "params"), single(typeName(m.Params))); err != nil {
				return nil, err
			}
		}
		if m.Result != nil {
			row.Result = typeName(m.Result)
			if err := put(FileName(m.Name, "result"), single(typeName(m.Result))); err != nil {
				return nil, err
			}
		}
		table = append(table, row)
	}
	bundle := bundleFile{
		Schema:  jsonschema.Version,
		Comment: Banner,
		Title:   "BridgeContract",
		Description: "Every type of Bridge's client contract, and in " + methodsKeyword +
			" the method table: name, direction, kind, and the names of the params and result definitions.",
		Defs:    defs,
		Methods: table,
	}
	if err := put(BundleFile, bundle); err != nil {
		return nil, err
	}
	return files, nil
}

// methodRow is one row of the bundle's method table. Members are in name
// order, as the generated files have always had them.
type methodRow struct {
	Capability string `json:"capability,omitempty"`
	Direction  string `json:"direction"`
	Doc        string `json:"doc"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	Params     string `json:"params,omitempty"`
	Result     string `json:"result,omitempty"`
}

// bundleFile is the bundle BundleFile: every definition and the method
// table (under methodsKeyword). Members are in name order.
type bundleFile struct {
	Comment     string         `json:"$comment"`
	Defs        map[string]any `json:"$defs"`
	Schema      string         `json:"$schema"`
	Description string         `json:"description"`
	Title       string         `json:"title"`
	Methods     []methodRow    `json:"x-bridge-methods"`
}

func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Generate writes every schema file into outDir, creating it, after
// removing the *.schema.json files already there so that a removed method
// leaves nothing behind.
func Generate(outDir string) error {
	files, err := Files()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	old, err := filepath.Glob(filepath.Join(outDir, "*.schema.json"))
	if err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return fmt.Errorf("schema: %w", err)
		}
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(outDir, n), files[n], 0o644); err != nil {
			return fmt.Errorf("schema: %w", err)
		}
	}
	return nil
}
