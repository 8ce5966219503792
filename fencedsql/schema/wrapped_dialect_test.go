package schema_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// wrappedSQLite is the natural customisation of a stock dialect (a method overridden,
// a metric added): the stock dialect embedded as its dialect.Dialect interface, so it
// keeps the stock Name ("sqlite") and hides every optional capability.
type wrappedSQLite struct{ dialect.Dialect }

// renamedSQLite is the same under a Name of its own.
type renamedSQLite struct {
	dialect.Dialect
	name string
}

func (r renamedSQLite) Name() string { return r.name }

// innerSQLite holds the stock dialect in an unexported field and forwards Dialect's
// methods by hand: built on it as well.
type innerSQLite struct{ d dialect.Dialect }

func (w innerSQLite) Name() string                                     { return "mine" }
func (w innerSQLite) Syntax() dialect.Syntax                           { return w.d.Syntax() }
func (w innerSQLite) NumberedParams() bool                             { return w.d.NumberedParams() }
func (w innerSQLite) QuoteIdent(s string) string                       { return w.d.QuoteIdent(s) }
func (w innerSQLite) Classify(err error) dialect.ErrorInfo             { return w.d.Classify(err) }
func (w innerSQLite) ColumnsQuery(t dialect.TableName) (string, []any) { return w.d.ColumnsQuery(t) }
func (w innerSQLite) SessionQuery() string                             { return w.d.SessionQuery() }
func (w innerSQLite) CheckSession(v string) error                      { return w.d.CheckSession(v) }
func (w innerSQLite) GuardColumnsDDL(t dialect.TableName, tok, ver string, mt, mv bool) []string {
	return w.d.GuardColumnsDDL(t, tok, ver, mt, mv)
}

// incomplete asserts err is the refusal of a dialect hiding capabilities: a
// *schema.ConfigError wrapping a *dialect.IncompleteError that names Registrar.
func incomplete(t *testing.T, what string, err error) {
	t.Helper()
	var ce *schema.ConfigError
	var ie *dialect.IncompleteError
	if !errors.As(err, &ce) || !errors.As(err, &ie) || !strings.Contains(err.Error(), "Registrar") {
		t.Errorf("%s: %v; want a *schema.ConfigError wrapping a *dialect.IncompleteError naming Registrar", what, err)
	}
}

func reducedDialects() map[string]dialect.Dialect {
	return map[string]dialect.Dialect{
		"embedded, stock name":   wrappedSQLite{sqlite.Dialect},
		"embedded, other name":   renamedSQLite{sqlite.Dialect, "sqlite3"},
		"unexported field":       innerSQLite{sqlite.Dialect},
		"wrapper of the wrapper": renamedSQLite{renamedSQLite{sqlite.Dialect, "a"}, "b"},
	}
}

// red-team rt45c F2: schema.MaxToken given a wrapped stock dialect answered the largest
// token of the listed table's rows only, with a nil error: the tombstone tables
// (TombstoneLister) and the token floor (FloorFinder) were skipped as if the database
// had none, and a lost lock service reseeded from that answer hands out again tokens
// already granted (the deleted row's 500, the floor's 2000). Now it is refused.
func TestMaxTokenRefusesWrappedDialect(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raw, spec := maxTokenFixture(t, ctx, "wrapped_acc")
	for name, d := range reducedDialects() {
		got, err := schema.MaxToken(ctx, raw, d, spec)
		if incomplete(t, "MaxToken, "+name, err); got != 0 {
			t.Errorf("MaxToken, %s answered %d beside the refusal", name, got)
		}
	}
}

// maxTokenFixture creates, in a new SQLite file, the guarded table named table with
// the guard installed by the stock dialect (and the statements extra run before the
// check), rows written under tokens up to 500, the row of token 500 deleted (its
// tombstone holds 500) and the token floor raised to 2000: the stock dialect's
// MaxToken answers 1999, a dialect that skipped tombstones or the floor 20.
func maxTokenFixture(t *testing.T, ctx context.Context, table string, extra ...string) (*sql.DB, schema.GuardSpec) {
	t.Helper()
	raw := testdb.Open(t, "sqlite", "file:"+filepath.ToSlash(filepath.Join(t.TempDir(), "m.db")))
	raw.SetMaxOpenConns(1)
	testdb.Exec(t, raw, append([]string{"CREATE TABLE " + table + " (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token INTEGER NOT NULL DEFAULT 0, version INTEGER NOT NULL DEFAULT 0)"}, extra...)...)
	spec := schema.GuardSpec{Table: table}
	reps, err := schema.Check(ctx, raw, sqlite.Dialect, spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reps {
		testdb.Exec(t, raw, r.Fix...)
	}
	testdb.Exec(t, raw,
		"INSERT INTO "+table+" (id, fence_token, version) VALUES (1, 10, 1), (2, 20, 1)",
		"UPDATE "+table+" SET fence_token = 500, version = version + 1 WHERE id = 1",
		"DELETE FROM "+table+" WHERE id = 1")
	if err := schema.RaiseTokenFloor(ctx, raw, sqlite.Dialect, 2000); err != nil {
		t.Fatal(err)
	}
	if got, err := schema.MaxToken(ctx, raw, sqlite.Dialect, spec); err != nil || got != 1999 {
		t.Fatalf("control: MaxToken with the stock dialect = %d, %v; want 1999", got, err)
	}
	return raw, spec
}

// red-team rt45c F3: schema.Check given a wrapped stock dialect reported no side door (a
// trigger of another table writing the guarded one), no lint, no replication, with a
// nil error. Now it is refused.
func TestCheckRefusesWrappedDialect(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raw := testdb.Open(t, "sqlite", "file:"+filepath.ToSlash(filepath.Join(t.TempDir(), "m.db")))
	testdb.Exec(t, raw, "CREATE TABLE wrapped_acc (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token INTEGER NOT NULL DEFAULT 0, version INTEGER NOT NULL DEFAULT 0)",
		"CREATE TABLE wrapped_other (id INTEGER PRIMARY KEY, v INTEGER)",
		"CREATE TRIGGER wrapped_door AFTER UPDATE ON wrapped_other BEGIN UPDATE wrapped_acc SET balance = NEW.v WHERE id = NEW.id; END")
	spec := schema.GuardSpec{Table: "wrapped_acc"}
	reps, err := schema.Check(ctx, raw, sqlite.Dialect, spec)
	if err != nil || len(reps) != 1 || len(reps[0].SideDoors) == 0 {
		t.Fatalf("control: the stock dialect's Check = %+v, %v; want the trigger door reported", reps, err)
	}
	for name, d := range reducedDialects() {
		reps, err := schema.Check(ctx, raw, d, spec)
		incomplete(t, "Check, "+name, err)
		if reps != nil {
			t.Errorf("Check, %s: reports %+v beside the refusal", name, reps)
		}
	}
}

// red-team rt45c F4: schema.Recorded and schema.Unlisted given a wrapped stock dialect
// answered "none", nil error, where the registry records two tables. Now they are
// refused, and so is every other entry point that takes a dialect.
func TestEntryPointsRefuseWrappedDialect(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raw := testdb.Open(t, "sqlite", "file:"+filepath.ToSlash(filepath.Join(t.TempDir(), "m.db")))
	testdb.Exec(t, raw, "CREATE TABLE wrapped_acc (id INTEGER PRIMARY KEY, fence_token INTEGER NOT NULL DEFAULT 0, version INTEGER NOT NULL DEFAULT 0)",
		"CREATE TABLE wrapped_b (id INTEGER PRIMARY KEY, fence_token INTEGER NOT NULL DEFAULT 0, version INTEGER NOT NULL DEFAULT 0)")
	if err := schema.RegisterTables(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "wrapped_acc"}, schema.GuardSpec{Table: "wrapped_b"}); err != nil {
		t.Fatal(err)
	}
	listed := schema.GuardSpec{Table: "wrapped_acc"}
	if u, err := schema.Unlisted(ctx, raw, sqlite.Dialect, listed); err != nil || len(u) != 1 {
		t.Fatalf("control: Unlisted with the stock dialect = %v, %v; want wrapped_b", u, err)
	}
	q := func(ctx context.Context, query string, args ...any) ([][]string, error) {
		return nil, errors.New("not reached")
	}
	table := dialect.TableName{Name: "wrapped_acc"}
	for name, d := range reducedDialects() {
		calls := map[string]func() error{
			"Unlisted":       func() error { _, err := schema.Unlisted(ctx, raw, d, listed); return err },
			"Recorded":       func() error { _, err := schema.Recorded(ctx, raw, d); return err },
			"RegisterTables": func() error { return schema.RegisterTables(ctx, raw, d, listed) },
			"TokenFloor":     func() error { _, err := schema.TokenFloor(ctx, raw, d); return err },
			"TokenFloors":    func() error { _, err := schema.TokenFloors(ctx, raw, d); return err },
			"RaiseTokenFloor": func() error {
				return schema.RaiseTokenFloor(ctx, raw, d, 5)
			},
			"RaiseTokenFloorReadOnly": func() error { return schema.RaiseTokenFloorReadOnly(ctx, raw, d, 5) },
			"TombstoneFix":            func() error { _, err := schema.TombstoneFix(ctx, raw, d, listed); return err },
			"PurgeTombstones":         func() error { _, err := schema.PurgeTombstones(ctx, raw, d, time.Hour, "wrapped_acc"); return err },
			"ReadRegistries":          func() error { _, err := schema.ReadRegistries(ctx, q, d); return err },
			"ReadRecords":             func() error { _, err := schema.ReadRecords(ctx, q, d); return err },
			"Guarded":                 func() error { _, err := schema.Guarded(ctx, q, d); return err },
			"Columns":                 func() error { _, err := schema.Columns(ctx, q, d, table, "fence_token", "version"); return err },
			"Lint":                    func() error { _, _, err := schema.Lint(ctx, q, d, table, "fence_token", "version"); return err },
		}
		for op, call := range calls {
			incomplete(t, op+", "+name, call())
		}
	}
}

// A dialect that leaves capabilities out on purpose names them (dialect.Reduced): it
// is accepted, and one it does not name is still refused.
type saysReduced struct {
	dialect.Dialect
	omits []string
}

func (s saysReduced) OmittedCapabilities() []string { return s.omits }

func TestReducedDialectNamingOmissionsAccepted(t *testing.T) {
	ctx := context.Background()
	raw := testdb.Open(t, "sqlite", "file:"+filepath.ToSlash(filepath.Join(t.TempDir(), "m.db")))
	all := dialect.MissingCapabilities(wrappedSQLite{}, sqlite.Dialect)
	if _, err := schema.Recorded(ctx, raw, saysReduced{sqlite.Dialect, all}); err != nil {
		t.Errorf("a dialect naming every capability it leaves out: %v", err)
	}
	var short []string
	for _, c := range all {
		if c != "Registrar" {
			short = append(short, c)
		}
	}
	incomplete(t, "a dialect leaving Registrar out without naming it", func() error {
		_, err := schema.Recorded(ctx, raw, saysReduced{sqlite.Dialect, short})
		return err
	}())
}
