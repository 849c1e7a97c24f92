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
// another method of the service, or to a method of one of its parts (the
// packages under rpc/service, as s.migrate.Execute(ctx, req)), is followed
// into it; one handed to anything else counts as read. The work-done token
// is rpc's, not the service's.
func TestServiceReadsEveryParamsField(t *testing.T) {
	funcs := serviceMethods(t)
	backend := reflect.TypeFor[schema.Backend]()
	for i := range backend.NumMethod() {
		m := backend.Method(i)
		params := m.Type.In(1)
		fd, ok := funcs["Service."+m.Name]
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

// serviceMethods parses the non-test files of the package and of its
// parts (the packages under it) and returns their methods by
// "Type.Method" (a part's type by its bare name: "Migrator.Execute").
func serviceMethods(t *testing.T) map[string]*ast.FuncDecl {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	parts, err := filepath.Glob("*/*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	out := map[string]*ast.FuncDecl{}
	for _, f := range append(files, parts...) {
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
			if typ := recvType(fd); typ != "" {
				out[typ+"."+fd.Name.Name] = fd
			}
		}
	}
	return out
}

// recvType is the name of fd's receiver type (T or *T).
func recvType(fd *ast.FuncDecl) string {
	x := fd.Recv.List[0].Type
	if star, ok := x.(*ast.StarExpr); ok {
		x = star.X
	}
	if id, ok := x.(*ast.Ident); ok {
		return id.Name
	}
	return ""
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
	key := recvType(fd) + "." + fd.Name.Name
	if seen[key] {
		return false
	}
	seen[key] = true
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
				// same type (recv.M) or of a part (recv.part.M), follow
				// it; anywhere else, it is read.
				if callees := calleesOf(funcs, fd, x); len(callees) > 0 {
					for _, callee := range callees {
						if reads(funcs, callee, i, field, seen) {
							found = true
						}
					}
					continue
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

// calleesOf returns the methods call may run when fd makes it: recv.M is
// M of fd's own type; recv.part.M is M of whichever part type has one.
func calleesOf(funcs map[string]*ast.FuncDecl, fd *ast.FuncDecl, call *ast.CallExpr) []*ast.FuncDecl {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return nil
	}
	switch x := sel.X.(type) {
	case *ast.Ident:
		if x.Name == fdRecv(fd) {
			if callee, ok := funcs[recvType(fd)+"."+sel.Sel.Name]; ok {
				return []*ast.FuncDecl{callee}
			}
		}
	case *ast.SelectorExpr:
		if recv, ok := x.X.(*ast.Ident); ok && recv.Name == fdRecv(fd) {
			var out []*ast.FuncDecl
			for key, callee := range funcs {
				if strings.HasSuffix(key, "."+sel.Sel.Name) && !strings.HasPrefix(key, "Service.") {
					out = append(out, callee)
				}
			}
			return out
		}
	}
	return nil
}
