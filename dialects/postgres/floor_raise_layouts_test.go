package postgres_test

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// quotePG quotes a PostgreSQL identifier.
func quotePG(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// TestRaiseCoversOddSchemaLayouts (red-team rt58d, held): a generator of schema
// layouts, seeded (FENCEDSQL_LAYOUT_SEED, else a fixed seed; FENCEDSQL_LAYOUT_TRIALS
// layouts, 4 by default). Guarded tables in schemas with odd names (dots, quotes,
// spaces, keywords, upper case, non-ASCII, a name that spells the floor's read), each
// guard installed through a session whose search_path starts with a random schema (so
// the guard reads that schema's floor), then RaiseTokenFloor(100) from the plain DSN.
// Oracle: the raise returns nil, TokenFloor answers 100, and every guarded table
// refuses a raw INSERT and UPDATE stamped 50.
func TestRaiseCoversOddSchemaLayouts(t *testing.T) {
	names := []string{"public", "app", "App", "we.ird", "sp ace", `x"q`, "select", "café", "a$b", "fencedsql_floor f WHERE", "9lives"}
	seed, trials := envInt("FENCEDSQL_LAYOUT_SEED", 58), envInt("FENCEDSQL_LAYOUT_TRIALS", 4)
	r := rand.New(rand.NewSource(seed))
	t.Logf("seed %d", seed)
	for trial := range trials {
		t.Run(fmt.Sprint(trial), func(t *testing.T) {
			dsn := testdb.Postgres(t)
			ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
			defer cancel()
			raw := testdb.Open(t, "pgx", dsn)
			for _, n := range names[1:] {
				testdb.Exec(t, raw, "CREATE SCHEMA "+quotePG(n))
			}
			type tbl struct{ schema, name, installer string }
			var tables []tbl
			nt := 2 + r.Intn(3)
			for i := 0; i < nt; i++ {
				tb := tbl{schema: names[r.Intn(len(names))], name: fmt.Sprintf("acc%d", i), installer: names[r.Intn(len(names))]}
				if r.Intn(3) == 0 {
					tb.installer = tb.schema
				}
				tables = append(tables, tb)
				q := quotePG(tb.schema) + "." + quotePG(tb.name)
				testdb.Exec(t, raw, "CREATE TABLE "+q+" (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
					"INSERT INTO "+q+" (id, fence_token, version) VALUES (1, 5, 1)")
				conn, err := raw.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				sp := quotePG(tb.installer)
				if r.Intn(2) == 0 {
					sp += ", public"
				}
				if _, err := conn.ExecContext(ctx, "SET search_path = "+sp); err != nil {
					t.Fatal(err)
				}
				g := postgres.Dialect.(dialect.Guarder)
				for _, s := range g.GuardDDL(dialect.CatalogName(tb.schema, tb.name), "fence_token", "version") {
					if _, err := conn.ExecContext(ctx, s); err != nil {
						conn.Close()
						t.Fatalf("guard of %s installed under search_path %s: %v\n%s", q, sp, err, s)
					}
				}
				if _, err := conn.ExecContext(ctx, "RESET search_path"); err != nil {
					t.Fatal(err)
				}
				conn.Close()
				t.Logf("table %s guard installed under search_path %s", q, sp)
			}
			err := schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, 100)
			if err != nil {
				t.Fatalf("RaiseTokenFloor over guards installed under various search paths: %v", err)
			}
			if f, err := schema.TokenFloor(ctx, raw, postgres.Dialect); err != nil || f != 100 {
				t.Errorf("TokenFloor after the raise to 100: %d, %v", f, err)
			}
			for _, tb := range tables {
				q := quotePG(tb.schema) + "." + quotePG(tb.name)
				for _, w := range []string{
					"INSERT INTO " + q + " (id, fence_token, version) VALUES (2, 50, 1)",
					"UPDATE " + q + " SET fence_token = 50, version = version + 1, balance = 7 WHERE id = 1",
				} {
					_, err := raw.ExecContext(ctx, w)
					if err == nil {
						t.Errorf("RaiseTokenFloor(100) returned nil, yet %q (installer search_path %s) was accepted under token 50", w, tb.installer)
					} else if !strings.Contains(err.Error(), postgres.FloorSQLState) && !strings.Contains(err.Error(), "token floor") {
						t.Logf("%q refused otherwise: %v", w, err)
					}
				}
			}
		})
	}
}

// envInt is the integer in the environment variable name, else def.
func envInt(name string, def int64) int64 {
	if v, err := strconv.ParseInt(os.Getenv(name), 10, 64); err == nil {
		return v
	}
	return def
}
