package postgres_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestSameTableTombstonedInTwoSchemas (red-team rt56d F3): the same table name guarded
// with tombstones in two schemas (a schema per tenant), installed by the schema tool
// (schema.Check's Fix for each schema-qualified table) or by GuardDDL/TombstoneDDL
// with the schema named, on the same or other fencing columns. Each schema's absence
// recorder, as installed, writes its own schema's tombstone table only, and is no door
// for the other schema's table: a pool listing one or both tables writes each under a
// fresh token, and a key deleted under the fresh token does not come back under a
// stale one. (Before the fix, the other schema's recorder was judged against this
// table's token column, and every write was refused with ErrSchema.)
func TestSameTableTombstonedInTwoSchemas(t *testing.T) {
	cases := []struct {
		name     string
		tool     bool
		tok2     string
		listings []string
		keyType  string // s2.accounts' key type
	}{
		{"tool_other_key_type", true, "fence_token", []string{"public.accounts", "public.accounts,s2.accounts"}, "TEXT"},
		{"tool_same_cols", true, "fence_token", []string{"public.accounts,s2.accounts"}, ""},
		{"tool_other_cols", true, "tok2", []string{"public.accounts", "public.accounts,s2.accounts:tok2:ver2"}, ""},
		{"ddl_same_cols", false, "fence_token", []string{"public.accounts,s2.accounts"}, ""},
		{"ddl_other_cols", false, "tok2", []string{"public.accounts", "public.accounts,s2.accounts:tok2:ver2"}, ""},
	}
	for _, c := range cases {
		for _, listing := range c.listings {
			t.Run(c.name+"_"+listing, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
				defer cancel()
				dsn := testdb.Postgres(t)
				raw := rawWith(t, dsn, "CREATE SCHEMA s2")
				ver2 := "version"
				if c.tok2 != "fence_token" {
					ver2 = "ver2"
				}
				key2 := "BIGINT"
				if c.keyType != "" {
					key2 = c.keyType
				}
				for _, sc := range []struct{ schema, tok, ver, key string }{{"public", "fence_token", "version", "BIGINT"}, {"s2", c.tok2, ver2, key2}} {
					testdb.Exec(t, raw, fmt.Sprintf("CREATE TABLE %s.accounts (id %s PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, %s BIGINT NOT NULL DEFAULT 0, %s BIGINT NOT NULL DEFAULT 0)", sc.schema, sc.key, sc.tok, sc.ver),
						fmt.Sprintf("INSERT INTO %s.accounts VALUES ('1', 5, 60, 1)", sc.schema))
					tn := dialect.TableName{Schema: sc.schema, Name: "accounts"}
					var stmts []string
					if c.tool {
						reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: sc.schema + ".accounts", TokenColumn: sc.tok, VersionColumn: sc.ver})
						if err != nil {
							t.Fatal(err)
						}
						stmts = reps[0].Fix
					} else {
						stmts = append(postgres.Dialect.(dialect.Guarder).GuardDDL(tn, sc.tok, sc.ver),
							postgres.Dialect.(dialect.Tombstoner).TombstoneDDL(tn, []dialect.KeyColumn{{Name: "id", Type: strings.ToLower(sc.key)}}, sc.tok)...)
					}
					testdb.Exec(t, raw, stmts...)
				}
				opts := []fencedsql.Option{fencedsql.WithDialect(postgres.Dialect)}
				for _, l := range strings.Split(listing, ",") {
					parts := strings.Split(l, ":")
					if len(parts) == 3 {
						opts = append(opts, fencedsql.Guard(parts[0], fencedsql.TokenColumn(parts[1]), fencedsql.VersionColumn(parts[2])))
					} else {
						opts = append(opts, fencedsql.Guard(parts[0]))
					}
				}
				conn, err := stdlib.GetDefaultDriver().(driver.DriverContext).OpenConnector(dsn)
				if err != nil {
					t.Fatal(err)
				}
				db := fencedsql.OpenDB(conn, opts...)
				defer db.Close()
				for _, l := range strings.Split(listing, ",") {
					tbl := strings.Split(l, ":")[0]
					if _, err := db.ExecContext(fencedsql.WithToken(ctx, 70), "UPDATE "+tbl+" SET balance = 7 WHERE id = '1'"); err != nil {
						t.Errorf("OVER-REFUSAL: fresh UPDATE of %s under 70 (pool listing %s): %v", tbl, listing, err)
					}
					if _, err := db.ExecContext(fencedsql.WithToken(ctx, 70), "DELETE FROM "+tbl+" WHERE id = '1'"); err != nil {
						t.Errorf("OVER-REFUSAL: fresh DELETE of %s under 70 (pool listing %s): %v", tbl, listing, err)
						continue
					}
					_, err := db.ExecContext(fencedsql.WithToken(ctx, 20), "INSERT INTO "+tbl+" (id, balance) VALUES ('1', 9)")
					var n int
					_ = raw.QueryRowContext(ctx, "SELECT count(*) FROM "+tbl+" WHERE id = '1'").Scan(&n)
					if n != 0 {
						t.Errorf("FAIL-OPEN: %s key 1 deleted under 70 re-inserted under 20 (err %v)", tbl, err)
					}
				}
			})
		}
	}
}

// TestChangedRecorderInOtherSchemaStillDoor: the rule above recognises another
// schema's recorder only as installed: a SECURITY DEFINER function of the recorder's
// name in s2 whose body deletes public's tombstones is a door for public.accounts, and
// the pool refuses its guarded writes with ErrSchema.
func TestChangedRecorderInOtherSchemaStillDoor(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn, "CREATE SCHEMA s2")
	testdb.Exec(t, raw, "CREATE TABLE public.accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
	reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "public.accounts"})
	if err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, reps[0].Fix...)
	testdb.Exec(t, raw, `CREATE FUNCTION s2.fencedsql_tombclaim_accounts(k bigint, tok bigint, strict boolean) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER AS $$ BEGIN DELETE FROM public.fencedsql_tomb_accounts WHERE id = k; END $$`)
	conn, err := stdlib.GetDefaultDriver().(driver.DriverContext).OpenConnector(dsn)
	if err != nil {
		t.Fatal(err)
	}
	db := fencedsql.OpenDB(conn, fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard("public.accounts"))
	defer db.Close()
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 70), "UPDATE public.accounts SET balance = 7 WHERE id = 1")
	if !errors.Is(err, fencedsql.ErrSchema) || !strings.Contains(err.Error(), "s2.fencedsql_tombclaim_accounts") {
		t.Fatalf("a recorder-named function in s2 deleting public's tombstones: err = %v; want ErrSchema naming it", err)
	}
}
