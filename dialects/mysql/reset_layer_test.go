package mysql_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// red-team rt45c F6: MySQL's ResetJudge peeled every Raw()-exposing layer and answered
// "session kept" for go-sql-driver's connection at the bottom, although the layer in
// between ran its own ResetSession — which set a non-strict sql_mode
// (NO_ENGINE_SUBSTITUTION), or replaced the connection by a new one whose DSN sets it.
// The session check, which refuses that mode at a connection's first write ("a fenced
// write would store 0 instead of failing"), was not re-armed: a stale UPDATE (token 5
// < the row's 20) committed and the token went back to 0. Now a layer that is not a
// known forwarder makes the judge answer "changed", and the write is refused.
func TestResetSessionOfWrapperLayerIsRechecked(t *testing.T) {
	for _, reconnect := range []bool{false, true} {
		name := "sets sql_mode"
		if reconnect {
			name = "reconnects"
		}
		t.Run(name, func(t *testing.T) {
			dsn := testdb.MySQL(t)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			raw := testdb.Open(t, "mysql", dsn,
				"CREATE TABLE reset_layer_acc (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
				"INSERT INTO reset_layer_acc (id, fence_token) VALUES (1, 10)")
			cfg, err := gomysql.ParseDSN(dsn)
			if err != nil {
				t.Fatal(err)
			}
			first, err := gomysql.NewConnector(cfg)
			if err != nil {
				t.Fatal(err)
			}
			lax := cfg.Clone()
			if lax.Params == nil {
				lax.Params = map[string]string{}
			}
			lax.Params["sql_mode"] = "'NO_ENGINE_SUBSTITUTION'"
			next, err := gomysql.NewConnector(lax)
			if err != nil {
				t.Fatal(err)
			}
			var mode atomic.Value
			mode.Store("")
			setMode := func(ctx context.Context, c driver.Conn) error {
				m := mode.Load().(string)
				if m == "" {
					return nil
				}
				_, err := c.(driver.ExecerContext).ExecContext(ctx, "SET SESSION sql_mode = '"+m+"'", nil)
				return err
			}
			layer := fencetest.ResetLayer{First: first, Next: next, OnReset: setMode, Reconnect: reconnect}
			db := fencedsql.OpenDB(layer,
				fencedsql.WithDialect(mysql.Dialect), fencedsql.Guard("reset_layer_acc"))
			t.Cleanup(func() { db.Close() })
			db.SetMaxOpenConns(1)
			if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), `UPDATE reset_layer_acc SET balance = 1 WHERE id = 1`); err != nil {
				t.Fatalf("strict session: fresh UPDATE: %v", err)
			}
			mode.Store("NO_ENGINE_SUBSTITUTION")
			_, err = db.ExecContext(fencedsql.WithToken(ctx, 5), `UPDATE reset_layer_acc SET balance = 666 WHERE id = 1`)
			var bal, tok int64
			if qerr := raw.QueryRowContext(ctx, `SELECT balance, fence_token FROM reset_layer_acc WHERE id = 1`).Scan(&bal, &tok); qerr != nil {
				t.Fatal(qerr)
			}
			if !errors.Is(err, fencedsql.ErrSchema) && !errors.Is(err, fencedsql.ErrFenced) || bal == 666 {
				t.Errorf("stale UPDATE after the wrapper layer's ResetSession (%s) made the session non-strict: %v (row now balance %d token %d); want ErrSchema (session check) or ErrFenced", name, err, bal, tok)
			}
		})
	}
}
