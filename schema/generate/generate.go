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
	for _, f := range files {
		src, err := fs.ReadFile(typeSources, f)
		if err != nil {
			return nil, fmt.Errorf("schema: read %s: %w", f, err)
		}
		file, err := parser.ParseFile(fset, f, src, parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("schema: parse %s: %w", f, err)
		}
		collectDocs(file, out)
	}
	return out, nil
})

func collectDocs(file *ast.File, out map[string]string) {
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
func typeName(v any) string { return reflect.TypeOf(v).Name() }

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
	r := &jsonschema.Reflector{AllowAdditionalProperties: true, Anonymous: true, CommentMap: comments,
		Mapper: func(t reflect.Type) *jsonschema.Schema {
			sh, ok := schema.Shapes()[t]
			if !ok {
				return nil
			}
			custom[t.Name()] = shapeSchema(sh)
			return &jsonschema.Schema{Ref: "#/$defs/" + t.Name()}
		}}
	defs := map[string]any{}
	for _, t := range contractTypes() {
		if t.Kind() != reflect.Struct {
			return nil, fmt.Errorf("schema: %s: params and results must be structs", t)
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
		if _, ok := m["description"]; !ok {
			if d := comments[pkgPath+"."+name]; d != "" {
				m["description"] = d
			}
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
	return defs, nil
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
	var table []any
	for _, m := range schema.Methods() {
		row := map[string]any{"name": m.Name, "direction": m.Direction.String(),
			"kind": m.Kind.String(), "doc": m.Doc}
		if m.Capability != "" {
			row["capability"] = m.Capability
		}
		if m.Params != nil {
			row["params"] = typeName(m.Params)
			if err := put(FileName(m.Name, "params"), single(typeName(m.Params))); err != nil {
				return nil, err
			}
		}
		if m.Result != nil {
			row["result"] = typeName(m.Result)
			if err := put(FileName(m.Name, "result"), single(typeName(m.Result))); err != nil {
				return nil, err
			}
		}
		table = append(table, row)
	}
	bundle := map[string]any{
		"$schema":  jsonschema.Version,
		"$comment": Banner,
		"title":    "BridgeContract",
		"description": "Every type of Bridge's client contract, and in " + methodsKeyword +
			" the method table: name, direction, kind, and the names of the params and result definitions.",
		"$defs":        defs,
		methodsKeyword: table,
	}
	if err := put(BundleFile, bundle); err != nil {
		return nil, err
	}
	return files, nil
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
