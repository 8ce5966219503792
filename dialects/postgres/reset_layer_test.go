package postgres_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"testing"

	"github.com/XSAM/otelsql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// tenantLayer is a driver wrapper layer (a tenancy wrapper) whose own ResetSession sets
// the tenant's search_path (setPath) on the connection it holds (the usual "set the
// tenant at checkout" done in a driver layer instead of pgx's OptionResetSession), or,
// with reconnect, replaces that connection by a new one from inner, whose AfterConnect
// sets it.
func tenantLayer(inner driver.Connector, setPath func(context.Context, *pgx.Conn) error, reconnect bool) fencetest.ResetLayer {
	return fencetest.ResetLayer{First: inner, Reconnect: reconnect,
		OnReset: func(ctx context.Context, c driver.Conn) error { return setPath(ctx, c.(*stdlib.Conn).Conn()) }}
}

// red-team rt45c F5: the ResetJudge peeled every Raw()-exposing wrapper layer and judged
// only pgx's stdlib connection at the bottom ("no OptionResetSession hook: session
// kept"), although the layer in between ran its own ResetSession — which moved the
// search_path to tenant t2, or replaced the connection by a new one whose search_path
// is t2's. The verdict cached for `accounts` on t1 covered t2.accounts, whose fencing
// columns are nullable (a fresh check refuses it), and a stale write landed there with
// a NULL token. Now a layer that is not a known forwarder makes the judge answer
// "changed": the session and name checks run again, and the write is refused
// (ErrSchema).
func TestResetSessionOfWrapperLayerIsRechecked(t *testing.T) {
	for _, reconnect := range []bool{false, true} {
		name := "the wrapper layer's ResetSession (sets search_path)"
		if reconnect {
			name = "the wrapper layer's ResetSession (reconnects)"
		}
		t.Run(name, func(t *testing.T) {
			tenantSwitchRechecked(t, name, func(cfg *pgx.ConnConfig, setPath func(context.Context, *pgx.Conn) error) driver.Connector {
				return tenantLayer(stdlib.GetConnector(*cfg, stdlib.OptionAfterConnect(setPath)), setPath, reconnect)
			})
		})
	}
}

// The judge through layers: pgx's connection bare, or under otelsql's connection (a
// known forwarder), keeps its session on reuse; under any other Raw()-exposing layer —
// alone or beneath otelsql's — it may not (red-team rt45c F5).
func TestResetKeepsSessionOnlyThroughKnownForwarders(t *testing.T) {
	dsn := testdb.Postgres(t)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	judge := postgres.Dialect.(dialect.ResetJudge)
	plain := stdlib.GetConnector(*cfg)
	layered := tenantLayer(plain, func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, "SELECT pg_catalog.set_config('search_path', 'public', false)")
		return err
	}, false)
	for _, c := range []struct {
		name string
		db   *sql.DB
		want bool
	}{
		{"bare", sql.OpenDB(plain), true},
		{"otelsql", otelsql.OpenDB(plain), true},
		{"own layer", sql.OpenDB(layered), false},
		{"otelsql over own layer", otelsql.OpenDB(layered), false},
	} {
		conn, err := c.db.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var got bool
		if err := conn.Raw(func(raw any) error { got = judge.ResetKeepsSession(raw.(driver.Conn)); return nil }); err != nil {
			t.Fatal(err)
		}
		conn.Close()
		c.db.Close()
		if got != c.want {
			t.Errorf("%s: ResetKeepsSession %v, want %v", c.name, got, c.want)
		}
	}
}
