package fencedsql_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	mysqld "github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestFencingColumnInUniqueKeyRefused (red-team rt59d F1 and rt60b F1, fail-open): a
// fencing column that one of the table's unique keys depends on — fenced_token_column=id
// with id the primary key, the version column in a unique index or a composite key
// (rt59d F1), or id made unique in another form: a unique index on an expression of
// it, an exclusion constraint, a unique key on a generated column computed from it, a
// partition's or inheritance child's own unique index (rt60b F1), a partition key
// (rt61a F1) — was accepted by the
// pool and by schema.Check. Every fenced write sets the fencing columns, so a newer
// holder's UPDATE of row 1 moved the row to key 20, and the stale holder's UPDATE of
// row 1 then found no row (no error: "not found", not ErrFenced) and its INSERT of key
// 1 landed. Now, on every dialect, for every such key: the pool refuses the table
// before anything is written (ErrSchema, the row unchanged) and schema.Check reports
// the problem, before and after its Fix. And a unique key of the same forms that does
// not involve a fencing column is still accepted (the fenced UPDATE writes).
func TestFencingColumnInUniqueKeyRefused(t *testing.T) {
	type key struct {
		name    string
		ddl     []string // the table, keyed
		tok     string   // the fencing columns the pool and Check are given
		ver     string
		refused bool // false: a unique key that does not involve the fencing columns
	}
	// The keys every dialect has (rt59d F1).
	common := []key{
		{"token is the primary key", []string{"CREATE TABLE accounts (id BIGINT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"}, "id", "version", true},
		{"version is the primary key", []string{"CREATE TABLE accounts (id BIGINT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"}, "fence_token", "id", true},
		{"token in a composite primary key", []string{"CREATE TABLE accounts (id BIGINT NOT NULL, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id, fence_token))"}, "fence_token", "version", true},
		{"version in a unique index", []string{"CREATE TABLE accounts (id BIGINT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, UNIQUE (balance, version))"}, "fence_token", "version", true},
	}
	// The other forms (rt60b F1): the table keyed on k, id (the token column) unique
	// through the form; or ("accepted") the same form on balance, the table fenced on
	// fence_token and version.
	const tbl = "CREATE TABLE accounts (k BIGINT NOT NULL PRIMARY KEY, id BIGINT NOT NULL, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0"
	// tblNoKey is tbl without the primary key, for tables partitioned by another column
	// (a partitioned table's unique keys must hold its partition key); byRange makes its
	// two range partitions, each with its own unique index on col.
	const tblNoKey = "CREATE TABLE accounts (k BIGINT NOT NULL, id BIGINT NOT NULL, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0"
	byRange := func(parent, col string) []string {
		return []string{
			"CREATE TABLE " + parent + "_lo PARTITION OF " + parent + " FOR VALUES FROM (MINVALUE) TO (10)",
			"CREATE TABLE " + parent + "_hi PARTITION OF " + parent + " FOR VALUES FROM (10) TO (MAXVALUE)",
			"CREATE UNIQUE INDEX " + parent + "_lo_" + col + " ON " + parent + "_lo (" + col + ")",
			"CREATE UNIQUE INDEX " + parent + "_hi_" + col + " ON " + parent + "_hi (" + col + ")",
		}
	}
	form := func(name string, refused bool, ddl ...string) key {
		if !refused {
			return key{name, ddl, "fence_token", "version", false}
		}
		return key{name, ddl, "id", "version", true}
	}
	backends := []struct {
		name, driver, raw string
		dsn               func(testing.TB) string
		d                 dialect.Dialect
		forms             []key
	}{
		{"sqlite", "fenced-sqlite", "sqlite", testdb.SQLite, sqlite.Dialect, []key{
			form("token in a unique index on +id", true, tbl+")", "CREATE UNIQUE INDEX accounts_id ON accounts (+id)"),
			form("token in a unique index on id + 0", true, tbl+")", "CREATE UNIQUE INDEX accounts_id ON accounts (id + 0)"),
			form("token copied by a unique generated column", true, tbl+", id_key BIGINT GENERATED ALWAYS AS (id) STORED UNIQUE)"),
			form("token copied by a virtual generated column in a unique index", true, tbl+", id_key BIGINT AS (id + 0) VIRTUAL)", "CREATE UNIQUE INDEX accounts_id ON accounts (id_key)"),
			form("version in a unique index's WHERE", true, tbl+")", "CREATE UNIQUE INDEX accounts_b ON accounts (balance) WHERE version >= 0"),
			form("accepted: a unique index on balance + 0", false, tbl+")", "CREATE UNIQUE INDEX accounts_b ON accounts (balance + 0)"),
			form("accepted: a unique generated copy of balance", false, tbl+", b_key BIGINT GENERATED ALWAYS AS (balance) STORED UNIQUE)"),
		}},
		{"postgres", "fenced-pgx", "pgx", testdb.Postgres, postgres.Dialect, []key{
			form("token in a unique index on (id + 0)", true, tbl+")", "CREATE UNIQUE INDEX accounts_id ON accounts ((id + 0))"),
			form("token copied by a unique generated column", true, tbl+", id_key BIGINT GENERATED ALWAYS AS (id) STORED UNIQUE)"),
			form("token in an exclusion constraint", true, tbl+")", "ALTER TABLE accounts ADD CONSTRAINT accounts_id EXCLUDE USING btree (id WITH =)"),
			form("token in a unique index of a partition", true, tbl+") PARTITION BY RANGE (k)", "CREATE TABLE accounts_all PARTITION OF accounts FOR VALUES FROM (MINVALUE) TO (MAXVALUE)", "CREATE UNIQUE INDEX accounts_all_id ON accounts_all (id)"),
			form("token in a unique index of an inheritance child", true, tbl+")", "CREATE TABLE accounts_child () INHERITS (accounts)", "CREATE UNIQUE INDEX accounts_child_id ON accounts_child ((id * 2))"),
			form("version in a unique index's WHERE", true, tbl+")", "CREATE UNIQUE INDEX accounts_b ON accounts (balance) WHERE version >= 0"),
			form("accepted: a unique index on (balance + 0)", false, tbl+")", "CREATE UNIQUE INDEX accounts_b ON accounts ((balance + 0))"),
			form("accepted: an exclusion constraint on balance", false, tbl+")", "ALTER TABLE accounts ADD CONSTRAINT accounts_b EXCLUDE USING btree (balance WITH =)"),
			form("accepted: a unique key INCLUDE (version)", false, tbl+", UNIQUE (balance) INCLUDE (version))"),
			form("accepted: a unique generated copy of balance", false, tbl+", b_key BIGINT GENERATED ALWAYS AS (balance) STORED UNIQUE)"),
			form("accepted: a partition's unique index on balance", false, tbl+") PARTITION BY RANGE (k)", "CREATE TABLE accounts_all PARTITION OF accounts FOR VALUES FROM (MINVALUE) TO (MAXVALUE)", "CREATE UNIQUE INDEX accounts_all_b ON accounts_all (balance)"),
			// A partition key (rt61a F1): each partition's unique index is a key of its own
			// rows only, and a fenced write moves the row to another partition.
			form("token in the partition key", true, append([]string{tblNoKey + ") PARTITION BY RANGE (id)"}, byRange("accounts", "k")...)...),
			form("token in a partition key's expression", true, append([]string{tblNoKey + ") PARTITION BY RANGE ((id / 10))"}, byRange("accounts", "k")...)...),
			form("token in a hash partition key", true, tblNoKey+") PARTITION BY HASH (id)",
				"CREATE TABLE accounts_h0 PARTITION OF accounts FOR VALUES WITH (MODULUS 2, REMAINDER 0)", "CREATE TABLE accounts_h1 PARTITION OF accounts FOR VALUES WITH (MODULUS 2, REMAINDER 1)",
				"CREATE UNIQUE INDEX accounts_h0_k ON accounts_h0 (k)", "CREATE UNIQUE INDEX accounts_h1_k ON accounts_h1 (k)"),
			form("version in a sub-partition's key", true, append([]string{tblNoKey + ") PARTITION BY LIST (k)", "CREATE TABLE accounts_1 PARTITION OF accounts FOR VALUES IN (1) PARTITION BY RANGE (version)"}, byRange("accounts_1", "k")...)...),
			form("accepted: a partition key on k", false, append([]string{tblNoKey + ") PARTITION BY RANGE (k)"}, byRange("accounts", "k")...)...),
			// An INCLUDE column is no part of a key (rt61a F3), beside an expression or a
			// predicate too.
			form("accepted: a unique expression index INCLUDE (version)", false, tbl+")", "CREATE UNIQUE INDEX accounts_b ON accounts ((balance + 0)) INCLUDE (version)"),
			form("accepted: a partial unique index INCLUDE (fence_token)", false, tbl+")", "CREATE UNIQUE INDEX accounts_b ON accounts (balance) INCLUDE (fence_token) WHERE balance > 0"),
		}},
		{"mariadb", "fenced-mysql", "mysql", testdb.MySQL, mysqld.Dialect, []key{
			form("token copied by a generated column in a unique key", true, tbl+", id_key BIGINT AS (id) PERSISTENT, UNIQUE KEY accounts_id (id_key))"),
			form("token copied by a virtual column in a unique key", true, tbl+", id_key BIGINT AS (`id` + 0) VIRTUAL, UNIQUE KEY accounts_id (id_key))"),
			form("token copied through two generated columns", true, tbl+", id_a BIGINT AS (ID) VIRTUAL, id_b BIGINT AS (id_a * 2) PERSISTENT, UNIQUE KEY accounts_id (balance, id_b))"),
			form("accepted: a generated copy of balance in a unique key", false, tbl+", b_key BIGINT AS (balance) PERSISTENT, UNIQUE KEY accounts_b (b_key))"),
		}},
	}
	for _, b := range backends {
		for _, k := range append(append([]key{}, common...), b.forms...) {
			t.Run(b.name+"/"+k.name, func(t *testing.T) {
				t.Parallel() // each in a database of its own: the set-ups overlap
				ctx := context.Background()
				dsn := b.dsn(t)
				setup := append(append([]string{}, k.ddl...), "INSERT INTO accounts (id, balance) VALUES (1, 100)")
				if strings.HasPrefix(k.ddl[0], "CREATE TABLE accounts (k ") {
					setup[len(setup)-1] = "INSERT INTO accounts (k, id, balance) VALUES (1, 1, 100)"
				}
				raw := testdb.Open(t, b.raw, dsn, setup...)
				spec := schema.GuardSpec{Table: "accounts", TokenColumn: k.tok, VersionColumn: k.ver}
				keyProblem := func(when string) {
					t.Helper()
					reps, err := schema.Check(schema.WithoutTombstones(ctx), raw, b.d, spec)
					if err != nil {
						t.Fatalf("schema.Check %s: %v", when, err)
					}
					var problems []string
					for _, r := range reps {
						for _, p := range r.Problems {
							if strings.Contains(p, "unique key") {
								problems = append(problems, p)
							}
						}
					}
					t.Logf("schema.Check %s: %q", when, problems)
					switch {
					case k.refused && len(problems) == 0:
						t.Errorf("schema.Check %s does not report the fencing column in a unique key: %+v", when, reps)
					case !k.refused && len(problems) > 0:
						t.Errorf("schema.Check %s reports a unique key that does not involve the fencing columns: %q", when, problems)
					}
				}
				keyProblem("before its Fix")
				reps, _ := schema.Check(schema.WithoutTombstones(ctx), raw, b.d, spec)
				for _, r := range reps {
					for _, f := range r.Fix {
						raw.ExecContext(ctx, f) //nolint:errcheck // a Fix that the key stops may fail: the point is Check after it
					}
				}
				keyProblem("after its Fix")
				sep := "?"
				if strings.Contains(dsn, "?") {
					sep = "&"
				}
				db, err := sql.Open(b.driver, dsn+sep+"fenced_tables=accounts&fenced_token_column="+k.tok+"&fenced_version_column="+k.ver)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				_, err = db.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE accounts SET balance = 200 WHERE id = 1")
				want := int64(100)
				switch {
				case k.refused && !errors.Is(err, fencedsql.ErrSchema):
					t.Errorf("a fenced UPDATE with the fencing column %s: %v; want ErrSchema", k.name, err)
				case !k.refused && err != nil:
					t.Errorf("a fenced UPDATE of a table with %s: %v; want it written", strings.TrimPrefix(k.name, "accepted: "), err)
				case !k.refused:
					want = 200
				}
				var bal int64
				if err := raw.QueryRowContext(ctx, "SELECT balance FROM accounts WHERE id = 1").Scan(&bal); err != nil || bal != want {
					t.Errorf("row 1 after the fenced UPDATE: balance %d, %v; want %d", bal, err, want)
				}
			})
		}
	}
}
