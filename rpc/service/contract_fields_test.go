package service_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bridge-dev/bridge/schema"
)

// TestServiceReadsEveryParamsField reads the service's source: every field
// of every client request's params reaches the service method that
// schema.Backend names (rpc's TestParamsRoundTrip shows it arrives there),
// and this test fails when that method never reads one — a field dropped
// on the way, as target.effort once was. A params value handed whole to
// another method of the service is followed into it; one handed to
// anything else counts as read. The work-done token is rpc's, not the
// service's.
func TestServiceReadsEveryParamsField(t *testing.T) {
	funcs := serviceMethods(t)
	backend := reflect.TypeFor[schema.Backend]()
	for i := range backend.NumMethod() {
		m := backend.Method(i)
		params := m.Type.In(1)
		fd, ok := funcs[m.Name]
		if !ok {
			t.Errorf("no (*Service).%s in rpc/service", m.Name)
			continue
		}
		for _, f := range fieldsOf(params) {
			if !reads(funcs, fd, 1, f, map[string]bool{}) {
				t.Errorf("(*Service).%s never reads %s.%s", m.Name, params.Name(), f)
			}
		}
	}
}

// serviceMethods parses the package's non-test files and returns the
// methods of *Service by name.
func serviceMethods(t *testing.T) map[string]*ast.FuncDecl {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	out := map[string]*ast.FuncDecl{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		file, err := parser.ParseFile(fset, f, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || len(fd.Recv.List) != 1 {
				continue
			}
			if star, ok := fd.Recv.List[0].Type.(*ast.StarExpr); ok {
				if id, ok := star.X.(*ast.Ident); ok && id.Name == "Service" {
					out[fd.Name.Name] = fd
				}
			}
		}
	}
	return out
}

// fieldsOf lists the Go names of t's fields, embedded structs flattened,
// leaving out the work-done token.
func fieldsOf(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		switch {
		case !f.IsExported():
		case f.Anonymous && f.Type == reflect.TypeFor[schema.WorkDoneProgressParams]():
		case f.Anonymous:
			out = append(out, fieldsOf(f.Type)...)
		default:
			out = append(out, f.Name)
		}
	}
	return out
}

// paramName is the name of fd's n-th parameter ("" when unnamed).
func paramName(fd *ast.FuncDecl, n int) string {
	i := 0
	for _, field := range fd.Type.Params.List {
		for _, name := range field.Names {
			if i == n {
				return name.Name
			}
			i++
		}
		if len(field.Names) == 0 {
			i++
		}
	}
	return ""
}

// reads reports whether fd reads field of its n-th parameter.
func reads(funcs map[string]*ast.FuncDecl, fd *ast.FuncDecl, n int, field string, seen map[string]bool) bool {
	if seen[fd.Name.Name] {
		return false
	}
	seen[fd.Name.Name] = true
	p := paramName(fd, n)
	if p == "" || p == "_" {
		return false
	}
	found := false
	selectors := map[*ast.Ident]bool{}
	ast.Inspect(fd.Body, func(node ast.Node) bool {
		if found {
			return false
		}
		switch x := node.(type) {
		case *ast.SelectorExpr:
			if id, ok := x.X.(*ast.Ident); ok && id.Name == p {
				selectors[id] = true
				if x.Sel.Name == field {
					found = true
				}
			}
		case *ast.CallExpr:
			for i, arg := range x.Args {
				id, ok := arg.(*ast.Ident)
				if !ok || id.Name != p {
					continue
				}
				// The whole value is passed on: into another method of the
				// service, follow it; anywhere else, it is read.
				if sel, ok := x.Fun.(*ast.SelectorExpr); ok {
					if recv, ok := sel.X.(*ast.Ident); ok && recv.Name == fdRecv(fd) {
						if callee, ok := funcs[sel.Sel.Name]; ok {
							if reads(funcs, callee, i, field, seen) {
								found = true
							}
							continue
						}
					}
				}
				found = true
			}
		case *ast.AssignStmt:
			// t := p (a copy read later) counts as read.
			for _, rhs := range x.Rhs {
				if id, ok := rhs.(*ast.Ident); ok && id.Name == p {
					found = true
				}
			}
		}
		return true
	})
	return found
}

// fdRecv is the name of fd's receiver.
func fdRecv(fd *ast.FuncDecl) string {
	if len(fd.Recv.List[0].Names) == 0 {
		return ""
	}
	return fd.Recv.List[0].Names[0].Name
}
