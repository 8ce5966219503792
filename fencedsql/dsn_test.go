package fencedsql_test

import (
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	mysqldialect "github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
)

// dsnForm is one DSN syntax: base DSNs its driver accepts, how to add a parameter at
// a position, and what the driver makes of a DSN (to compare the cleaned DSN with the
// base: the same connection, nothing of ours left).
type dsnForm struct {
	name    string
	dialect dialect.Dialect
	bases   []string
	add     func(r *rand.Rand, dsn, kv string) string
	parse   func(dsn string) (any, error)
}

func dsnForms() []dsnForm {
	urlAdd := func(r *rand.Rand, dsn, kv string) string {
		base, query, ok := strings.Cut(dsn, "?")
		if !ok || query == "" {
			return base + "?" + kv
		}
		parts := strings.Split(query, "&")
		i := r.IntN(len(parts) + 1)
		parts = slices.Insert(parts, i, kv)
		return base + "?" + strings.Join(parts, "&")
	}
	pgParse := func(dsn string) (any, error) {
		c, err := pgconn.ParseConfig(dsn)
		if err != nil {
			return nil, err
		}
		// The parts a DSN sets (ParseConfig's functions and TLS config are not comparable).
		return fmt.Sprint(c.Host, c.Port, c.Database, c.User, c.Password, c.RuntimeParams, c.ConnectTimeout), nil
	}
	return []dsnForm{
		{
			name: "postgres URL", dialect: postgres.Dialect,
			bases: []string{
				"postgres://app:s3cr%3Fet@db.example:5432/shop?sslmode=disable",
				"postgresql://app@db/shop",
				"postgres://app:pw@h1:5432,h2:5433/shop?sslmode=disable&application_name=a%3Db&connect_timeout=5",
				"postgres://app:pw@[::1]:5432/env%3Dprod",
			},
			add: func(r *rand.Rand, dsn, kv string) string {
				// A URL from the first '?'; the host part may hold '=' when escaped.
				return urlAdd(r, dsn, kv)
			},
			parse: pgParse,
		},
		{
			name: "postgres keyword/value", dialect: postgres.Dialect,
			bases: []string{
				"host=db user=app password='p w=x?y' dbname=shop sslmode=disable",
				"host=/var/run/postgresql dbname=env=prod user=app",
				"  host=db\tport=5432   dbname=shop ",
				"user=app password=ab\\'c dbname=shop",
			},
			add: func(r *rand.Rand, dsn, kv string) string {
				fields := splitKV(dsn)
				i := r.IntN(len(fields) + 1)
				fields = slices.Insert(fields, i, kv)
				return strings.Join(fields, " ")
			},
			parse: pgParse,
		},
		{
			name: "mysql", dialect: mysqldialect.Dialect,
			bases: []string{
				"app:pw@tcp(127.0.0.1:3306)/shop?parseTime=true",
				"app:p?w/x@tcp(127.0.0.1:3306)/shop",
				"app@unix(/tmp/mysql.sock)/shop?charset=utf8mb4&loc=Local",
				"/shop",
			},
			add: func(r *rand.Rand, dsn, kv string) string {
				slash := strings.LastIndexByte(dsn, '/')
				if q := strings.IndexByte(dsn[slash:], '?'); q >= 0 {
					return dsn[:slash] + urlAdd(r, dsn[slash:], kv)
				}
				return dsn + "?" + kv
			},
			parse: func(dsn string) (any, error) {
				c, err := mysql.ParseDSN(dsn)
				if err != nil {
					return nil, err
				}
				return c.FormatDSN(), nil
			},
		},
		{
			name: "sqlite", dialect: sqlite.Dialect,
			bases: []string{
				"/srv/env=prod/app.db",
				"file:/srv/env=prod/app.db?_pragma=busy_timeout(5000)",
				"app.db?_pragma=foreign_keys(1)&_txlock=immediate",
				"file::memory:?cache=shared",
			},
			add: func(r *rand.Rand, dsn, kv string) string { return urlAdd(r, dsn, kv) },
			parse: func(dsn string) (any, error) {
				// modernc.org/sqlite: the file name before the first '?', then the
				// parameters, order kept.
				return dsn, nil
			},
		},
	}
}

// splitKV splits keyword/value text into its fields, keeping quoted values whole.
func splitKV(s string) []string {
	var out []string
	var cur strings.Builder
	quoted := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && quoted && i+1 < len(s):
			cur.WriteByte(c)
			i++
			cur.WriteByte(s[i])
			continue
		case c == '\'':
			quoted = !quoted
		case (c == ' ' || c == '\t') && !quoted:
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
			continue
		}
		cur.WriteByte(c)
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// openFakeDSN opens dsn through a fenced fake driver of dialect d and returns the DSN the
// fake received (after Ping) and the DB, or the error.
func openFakeDSN(t *testing.T, d dialect.Dialect, dsn string) (string, *sql.DB, error) {
	t.Helper()
	rec := newFakeRec()
	name := registerFake(t, &fakeDriver{rec: rec, full: true}, fencedsql.WithDialect(d), fencedsql.WithSchemaCheck(false))
	db, err := sql.Open(name, dsn)
	if err != nil {
		return "", nil, err
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Ping(); err != nil {
		return "", nil, err
	}
	return rec.lastDSN(), db, nil
}

// For every DSN form and base DSN the driver accepts, with fenced_tables (and other
// parameters of ours) inserted at random places: the driver receives a DSN it reads as
// the base, and the pool guards exactly the tables given. A repeated parameter of ours
// and every misspelling of one are refused at Open, never sent.
func TestDSNProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	tablesPool := []string{"accounts", "orders", "shop.ledger", "t1", "x_y"}
	for _, f := range dsnForms() {
		for _, base := range f.bases {
			want, err := f.parse(base)
			if err != nil {
				t.Fatalf("%s: base %q does not parse: %v", f.name, base, err)
			}
			for round := 0; round < 25; round++ {
				n := 1 + r.IntN(3)
				tables := slices.Clone(tablesPool)
				r.Shuffle(len(tables), func(i, j int) { tables[i], tables[j] = tables[j], tables[i] })
				tables = tables[:n]
				dsn := f.add(r, base, fencedsql.ParamTables+"="+strings.Join(tables, ","))
				if r.IntN(2) == 0 {
					dsn = f.add(r, dsn, fencedsql.ParamStrict+"=true")
				}
				got, db, err := openFakeDSN(t, f.dialect, dsn)
				if err != nil {
					t.Fatalf("%s: %q: %v", f.name, dsn, err)
				}
				if containsFoldStr(got, "fenced_") {
					t.Fatalf("%s: %q reached the driver as %q: a parameter of ours leaked", f.name, dsn, got)
				}
				have, err := f.parse(got)
				if err != nil || !reflect.DeepEqual(have, want) {
					t.Fatalf("%s: %q reached the driver as %q, which reads %v (%v); the base reads %v", f.name, dsn, got, have, err, want)
				}
				for _, tb := range tablesPool {
					_, err := db.Exec("UPDATE " + tb + " SET x = 1")
					if guarded := errors.Is(err, fencedsql.ErrNoToken); guarded != slices.Contains(tables, tb) {
						t.Fatalf("%s: %q: table %s guarded = %v (err %v), listed %v", f.name, dsn, tb, guarded, err, tables)
					}
				}
			}
			// Repeated, and misspelled in every way that a person types.
			for _, bad := range []string{
				fencedsql.ParamTables + "=a&" + fencedsql.ParamTables + "=b",
				"fencedtables=a", "fenced-tables=a", "FENCED_TABLES=a", "Fenced_Tables=a", "fenced.tables=a", "fenced_tabels=a", "fenced_table=a", "fenced=a",
			} {
				dsn := base
				for _, kv := range strings.Split(bad, "&") {
					dsn = f.add(r, dsn, kv)
				}
				_, _, err := openFakeDSN(t, f.dialect, dsn)
				var ce *fencedsql.ConfigError
				if !errors.As(err, &ce) {
					t.Errorf("%s: %q: err = %v, want *ConfigError", f.name, dsn, err)
				} else if strings.Contains(err.Error(), "pw") || strings.Contains(err.Error(), "s3cr") {
					t.Errorf("%s: the error quotes the DSN's password: %v", f.name, err)
				}
			}
		}
	}
}

func containsFoldStr(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}
