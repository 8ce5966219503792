package fencedsql_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
	msqlite "modernc.org/sqlite"
)

// Red-team rt28a F6 (a second Register compared on the whole resolved configuration)
// and F5 (a DSN parameter contradicting an option given in code).

// TestRegisterTwiceComparesSchemaRecheck (fail-open through a registration that
// is silently ignored). fencedsql.Register of a name already registered is a no-op
// when sameRegistration finds "options to the same effect"; it compares the dialect,
// guards, strict mode, schema check, allowances and whether a token source is set —
// but not WithSchemaRecheck (nor which token source). A second registration of the
// same name asking for a short recheck (a package that wants a migration that drops
// the fence found quickly) is dropped without a word, and the pool keeps the first
// registration's "never recheck" (d <= 0): after the table is rebuilt with a nullable
// fence column, a stale write (token 5 under the row's 10) is stored with the token
// NULL-ed — it lands, where the requested recheck would have run the check again and
// refused it with ErrSchema.
//
// Right behaviour: a registration whose recheck bound (or token source) differs is
// not "the same registration": Register panics as for any other difference (or
// keeps the stricter of the two bounds).
func TestRegisterTwiceComparesSchemaRecheck(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "t.db")
	raw := testdb.Open(t, "sqlite", "file:"+path,
		`CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts (id, balance, fence_token) VALUES (1, 1, 10)`)
	fencedsql.Register("rt28a-sqlite-recheck", &msqlite.Driver{}, fencedsql.WithDialect(sqlite.Dialect), fencedsql.WithSchemaRecheck(fencedsql.NeverRecheck))
	second := func() (p any) {
		defer func() { p = recover() }()
		fencedsql.Register("rt28a-sqlite-recheck", &msqlite.Driver{}, fencedsql.WithDialect(sqlite.Dialect), fencedsql.WithSchemaRecheck(time.Millisecond))
		return nil
	}()
	if second != nil {
		if _, ok := second.(*fencedsql.ConfigError); !ok {
			t.Fatalf("second Register panicked with %T %v, want a *fencedsql.ConfigError", second, second)
		}
		return // refused: the decided behaviour
	}
	db := testdb.Open(t, "rt28a-sqlite-recheck", "file:"+path+"?fenced_tables=accounts")
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), `UPDATE accounts SET balance = 2 WHERE id = 1`); err != nil {
		t.Fatal(err) // the verdict is cached now
	}
	// A migration rebuilds the table; the fence column loses NOT NULL.
	testdb.Exec(t, raw,
		`CREATE TABLE accounts_new (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token BIGINT DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts_new SELECT * FROM accounts`,
		`DROP TABLE accounts`,
		`ALTER TABLE accounts_new RENAME TO accounts`)
	time.Sleep(20 * time.Millisecond) // past the second registration's recheck bound
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 5), `UPDATE accounts SET balance = 666 WHERE id = 1`)
	var bal int64
	if qerr := raw.QueryRow(`SELECT balance FROM accounts WHERE id = 1`).Scan(&bal); qerr != nil {
		t.Fatal(qerr)
	}
	if err == nil || bal == 666 {
		t.Errorf("second Register with WithSchemaRecheck(1ms) silently ignored: stale write (token 5 < 10) after the fence column became nullable: err = %v, balance %d; "+
			"want the re-registration refused, or the recheck honoured (ErrSchema, balance 2)", err, bal)
	}
}

// fixedTokens is a TokenSource.
type fixedTokens struct{ n uint64 }

func (s *fixedTokens) LastToken(context.Context) (uint64, error) { return s.n, nil }

// TestRegisterTwiceComparesWholeConfig: a second Register of a name is a no-op only
// when every option resolves the same (the token source by identity, the recheck
// bound, ...; a default spelled out is no difference); any difference panics with a *ConfigError.
func TestRegisterTwiceComparesWholeConfig(t *testing.T) {
	src := &fixedTokens{n: 1}
	base := []fencedsql.Option{fencedsql.WithDialect(sqlite.Dialect), fencedsql.WithTokenSource(src), fencedsql.WithSchemaRecheck(time.Second)}
	fencedsql.Register("rt28a-sqlite-whole", &msqlite.Driver{}, base...)
	fencedsql.Register("rt28a-sqlite-whole", &msqlite.Driver{}, base...) // the same again: no panic
	fencedsql.Register("rt28a-sqlite-whole", &msqlite.Driver{}, append(base, fencedsql.WithLogger(nil))...)
	// A default spelled out is the same registration (red-team rt30a F6).
	fencedsql.Register("rt28a-sqlite-whole", &msqlite.Driver{}, append(base[:3:3], fencedsql.WithStrict(false))...)
	for what, opts := range map[string][]fencedsql.Option{
		"another token source (same value)": {fencedsql.WithDialect(sqlite.Dialect), fencedsql.WithTokenSource(&fixedTokens{n: 1}), fencedsql.WithSchemaRecheck(time.Second)},
		"no token source":                   {fencedsql.WithDialect(sqlite.Dialect), fencedsql.WithSchemaRecheck(time.Second)},
		"another recheck bound":             {fencedsql.WithDialect(sqlite.Dialect), fencedsql.WithTokenSource(src), fencedsql.WithSchemaRecheck(2 * time.Second)},
		"another statement cache":           append(base[:3:3], fencedsql.WithStatementCache(3)),
	} {
		t.Run(what, func(t *testing.T) {
			defer func() {
				p := recover()
				if _, ok := p.(*fencedsql.ConfigError); !ok {
					t.Fatalf("Register: panic %T %v, want a *fencedsql.ConfigError", p, p)
				}
			}()
			fencedsql.Register("rt28a-sqlite-whole", &msqlite.Driver{}, opts...)
		})
	}
}

// TestDSNContradictsOption (F5): each fenced_* parameter that contradicts an option
// given in code is a *ConfigError at Open; one that repeats it, or sets what the code
// left unset, is accepted.
func TestDSNContradictsOption(t *testing.T) {
	path := "file:" + filepath.Join(t.TempDir(), "t.db")
	fencedsql.Register("rt28a-sqlite-explicit", &msqlite.Driver{}, fencedsql.WithDialect(sqlite.Dialect),
		fencedsql.WithSchemaCheck(true), fencedsql.WithStrict(false), fencedsql.WithDDL(false), fencedsql.WithDynamicSQL(false))
	fencedsql.Register("rt28a-sqlite-implicit", &msqlite.Driver{}, fencedsql.WithDialect(sqlite.Dialect))
	for _, c := range []struct {
		driver, params string
		refused        bool
	}{
		{"rt28a-sqlite-explicit", "fenced_schema_check=false", true},
		{"rt28a-sqlite-explicit", "fenced_strict=true", true},
		{"rt28a-sqlite-explicit", "fenced_allow=ddl", true},
		{"rt28a-sqlite-explicit", "fenced_allow=dynamic_sql", true},
		{"rt28a-sqlite-explicit", "fenced_schema_check=true&fenced_strict=false", false},
		{"rt28a-sqlite-explicit", "fenced_tables=accounts", false},
		{"rt28a-sqlite-implicit", "fenced_schema_check=false&fenced_strict=true&fenced_allow=ddl,dynamic_sql", false},
	} {
		db, err := sql.Open(c.driver, path+"?"+c.params)
		if err == nil {
			db.Close()
		}
		var ce *fencedsql.ConfigError
		if got := errors.As(err, &ce); got != c.refused {
			t.Errorf("%s with %s: Open error %v, want refused = %v", c.driver, c.params, err, c.refused)
		}
		// OpenDB over a DSNConnector reads the DSN the same way.
		odb := fencedsql.OpenDB(fencedsql.DSNConnector(&msqlite.Driver{}, path+"?"+c.params), fencedsql.WithDialect(sqlite.Dialect),
			fencedsql.WithSchemaCheck(true), fencedsql.WithStrict(false), fencedsql.WithDDL(false), fencedsql.WithDynamicSQL(false))
		perr := odb.Ping()
		odb.Close()
		if c.driver == "rt28a-sqlite-explicit" && errors.As(perr, &ce) != c.refused {
			t.Errorf("OpenDB with %s: Ping error %v, want refused = %v", c.params, perr, c.refused)
		}
	}
}

// registerTwice registers name with first, then with second, and returns what the
// second Register panicked with (nil for none).
func registerTwice(name string, first, second []fencedsql.Option) (p any) {
	fencedsql.Register(name, &msqlite.Driver{}, first...)
	defer func() { p = recover() }()
	fencedsql.Register(name, &msqlite.Driver{}, second...)
	return nil
}

// TestRegisterTwiceIgnoresGuardOrder (over-refusal). Two packages (or one building its
// options from a map, whose iteration order is random) register the same name with the
// same guarded tables given in another order: Guard("accounts"), Guard("orders") and
// Guard("orders"), Guard("accounts"). The pools they open guard exactly the same
// tables, yet sameRegistration compares the guards slice element by element and the
// second Register panics with a *ConfigError ("configuration fields that differ:
// guards").
//
// Right behaviour: the guards are a set (keyed by table); the same set in another order
// (or a Guard repeated) is the same registration and the second Register does nothing.
func TestRegisterTwiceIgnoresGuardOrder(t *testing.T) {
	d := fencedsql.WithDialect(sqlite.Dialect)
	p := registerTwice("rt30a-sqlite-order",
		[]fencedsql.Option{d, fencedsql.Guard("accounts"), fencedsql.Guard("orders")},
		[]fencedsql.Option{d, fencedsql.Guard("orders"), fencedsql.Guard("accounts")})
	if p != nil {
		t.Errorf("second Register with the same guards in another order panicked: %v; want it accepted as the same registration", p)
	}
}

// TestRegisterTwiceExplicitDefaultIsSame (over-refusal). One package registers a name with
// WithDialect only; another, with the same dialect and WithStrict(false),
// WithSchemaCheck(true), WithDDL(false), WithDynamicSQL(false) — each the default. Every
// field that decides what is fenced resolves to the same value, but the bookkeeping
// field "explicit" (which settings an option named) differs, so the second Register
// panics ("configuration fields that differ: explicit").
//
// Right behaviour: options that resolve to the same configuration are the same
// registration (the doc comment of Register); at most, the explicit bits should be
// merged (they only make a contradicting DSN parameter an error).
func TestRegisterTwiceExplicitDefaultIsSame(t *testing.T) {
	d := fencedsql.WithDialect(sqlite.Dialect)
	p := registerTwice("rt30a-sqlite-explicit",
		[]fencedsql.Option{d},
		[]fencedsql.Option{d, fencedsql.WithStrict(false), fencedsql.WithSchemaCheck(true), fencedsql.WithDDL(false), fencedsql.WithDynamicSQL(false)})
	if p != nil {
		t.Errorf("second Register with the defaults spelled out panicked: %v; want it accepted as the same registration", p)
	}
}
