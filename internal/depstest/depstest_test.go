package depstest

import (
	"slices"
	"testing"
)

// recorder is a testing.TB that records failures instead of reporting them.
type recorder struct {
	testing.TB
	errors int
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.errors++ }

func TestDepsListsImports(t *testing.T) {
	deps := Deps(t, ".")
	for _, want := range []string{"github.com/fencedsql/fencedsql/internal/depstest", "os/exec", "strings"} {
		if !slices.Contains(deps, want) {
			t.Errorf("Deps(.) lacks %s: %v", want, deps)
		}
	}
}

func TestForbidFindsADependency(t *testing.T) {
	r := &recorder{TB: t}
	Forbid(r, ".", "os", "github.com/jmoiron/sqlx")
	if r.errors < 2 { // "os" itself and "os/exec", under it; sqlx is not linked
		t.Fatalf("Forbid reported %d errors, want one for os and one for os/exec", r.errors)
	}
	r = &recorder{TB: t}
	Forbid(r, ".", "github.com/jmoiron/sqlx", "github.com/go-sql-driver/mysql")
	if r.errors != 0 {
		t.Fatalf("Forbid reported %d errors for packages depstest does not link", r.errors)
	}
}
