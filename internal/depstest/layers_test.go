package depstest

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const mod = "github.com/fencedsql/fencedsql"

// layer is one import rule: pkg (and, with tree, every package under it) may not link
// any package in exact, nor any package under a prefix in under.
type layer struct {
	pkg   string
	tree  bool
	exact []string
	under []string
	why   string
}

// The layers of docs/design.md §2: applications call fencedsql; dialects implement
// fencedsql/dialect; the schema toolkit (fencedsql/schema) and the planner
// (fencedsql/internal/plan) sit under the wrapper and know nothing of it; the lock client
// knows nothing of fencedsql; fencedsql names no database.
var layers = []layer{
	{pkg: mod + "/fencedsql", under: []string{mod + "/dialects", "github.com/jackc/pgx", "github.com/go-sql-driver/mysql", "modernc.org/sqlite", "github.com/jmoiron/sqlx"},
		why: "the wrapper names no database: dialects register themselves"},
	{pkg: mod + "/fencedsql/dialect", exact: []string{mod + "/fencedsql", mod + "/fencedsql/schema", mod + "/fencedsql/internal/plan", "database/sql"},
		under: []string{mod + "/dialects", mod + "/lockclient"},
		why:   "the dialect API is the bottom layer: what a dialect implements, nothing that uses it"},
	{pkg: mod + "/fencedsql/schema", exact: []string{mod + "/fencedsql", mod + "/fencedsql/internal/plan"},
		under: []string{mod + "/dialects", mod + "/lockclient"},
		why:   "the schema toolkit works on any *sql.DB with a dialect value, below the wrapper"},
	{pkg: mod + "/fencedsql/internal/plan", exact: []string{mod + "/fencedsql", mod + "/fencedsql/schema", "database/sql", "database/sql/driver"},
		under: []string{mod + "/dialects", mod + "/lockclient"},
		why:   "the planner is a pure function of SQL text, guarded tables and lexical rules: no connections"},
	{pkg: mod + "/lockclient", tree: true, under: []string{mod + "/fencedsql", mod + "/dialects"},
		why: "the lock client and its backends import nothing from fencedsql"},
	{pkg: mod + "/dialects/postgres", under: []string{"github.com/go-sql-driver/mysql", "modernc.org/sqlite"},
		why: "a dialect links its own driver only (and sqlx, to bind its name's placeholder style)"},
	{pkg: mod + "/dialects/mysql", under: []string{"github.com/jackc/pgx", "modernc.org/sqlite"},
		why: "a dialect links its own driver only (pgx may come in through lockclient/sqllock, not through the dialect)"},
	{pkg: mod + "/dialects/sqlite", under: []string{"github.com/go-sql-driver/mysql", "github.com/jackc/pgx"},
		why: "a dialect links its own driver only (and sqlx, to bind its name's placeholder style)"},
}

// TestLayers asserts the import rules between the module's packages with go list -deps.
func TestLayers(t *testing.T) {
	for _, l := range layers {
		pkgs := []string{l.pkg}
		if l.tree {
			pkgs = packagesUnder(t, l.pkg)
		}
		for _, p := range pkgs {
			checkLayer(t, l, p)
		}
	}
}

// TestLayersCatchAViolation: a rule that the code breaks is reported (fencedsql
// imports lockclient, for Maintain and WithTokenSource).
func TestLayersCatchAViolation(t *testing.T) {
	r := &recorder{TB: t}
	checkLayer(r, layer{pkg: mod + "/fencedsql", under: []string{mod + "/lockclient"}, why: "test"}, mod+"/fencedsql")
	if r.errors == 0 {
		t.Fatal("a broken rule was not reported")
	}
}

// checkLayer reports each package p links that l forbids.
func checkLayer(t testing.TB, l layer, p string) {
	t.Helper()
	for _, d := range Deps(t, p) {
		if slices.Contains(l.exact, d) {
			t.Errorf("%s imports %s: %s", p, d, l.why)
		}
		for _, u := range l.under {
			if d == u || strings.HasPrefix(d, u+"/") {
				t.Errorf("%s imports %s: %s", p, d, l.why)
			}
		}
	}
}

// packagesUnder lists root and the packages under it that import anything (go list
// root/...: commands included; a documentation-only package has nothing to check).
func packagesUnder(t *testing.T, root string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{if .Imports}}{{.ImportPath}}{{end}}", root+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list %s/...: %v\n%s", root, err, out)
	}
	pkgs := strings.Fields(string(out))
	if len(pkgs) < 2 {
		t.Fatalf("go list %s/... lists %d packages, implausible", root, len(pkgs))
	}
	return pkgs
}
