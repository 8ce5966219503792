package dialect

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// Every interface this package declares, Dialect and Reduced (a dialect's statement of
// what it leaves out, not a capability) aside, is in optionalInterfaces:
// MissingCapabilities (WithDialect's check, red-team rt44b F2) must not forget a
// capability added later.
func TestOptionalInterfacesListed(t *testing.T) {
	listed := map[string]bool{}
	for _, it := range optionalInterfaces() {
		listed[it.Name()] = true
	}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				if _, ok := ts.Type.(*ast.InterfaceType); !ok || !ts.Name.IsExported() || ts.Name.Name == "Dialect" || ts.Name.Name == "Reduced" {
					continue
				}
				if !listed[ts.Name.Name] {
					t.Errorf("%s: interface %s is not in optionalInterfaces (capabilities.go)", e.Name(), ts.Name.Name)
				}
			}
		}
	}
}
