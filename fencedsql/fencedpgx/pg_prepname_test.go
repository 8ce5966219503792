package fencedpgx_test

import (
	"context"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/fencedpgx"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pgx runs the statement prepared under a name when the query text equals the name
// (red-team F9): a guarded UPDATE prepared natively in AfterConnect, sent by its name
// through the fenced pool, is refused with ErrUnsupported (the planner sees only
// "set_balance", no statement keyword) instead of running unfenced; the row keeps its
// token. The pool's own Prepare (stmtMap) is unaffected: testPrepared.
func TestPreparedNameRefused(t *testing.T) {
	for _, mode := range []string{"cache_statement", "exec", "simple_protocol"} {
		t.Run(mode, func(t *testing.T) {
			e := newPGEnv(t, mode)
			e.seed(50, 1)
			cfg, err := pgxpool.ParseConfig(e.dsn)
			if err != nil {
				t.Fatal(err)
			}
			cfg.MaxConns = 2
			cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
				_, err := c.Prepare(ctx, "set_balance", "UPDATE accounts SET balance = $1 WHERE id = $2")
				return err
			}
			p, err := pgxpool.NewWithConfig(e.ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.Close)
			db, err := fencedpgx.New(p, fencedsql.Guard("accounts"))
			if err != nil {
				t.Fatal(err)
			}
			before := e.row(1)
			_, err = db.Exec(tok(e.ctx, 10), "set_balance", 0, 1)
			wantErr(t, err, fencedsql.ErrUnsupported)
			b := &pgx.Batch{}
			b.Queue("set_balance", 0, 1)
			err = db.SendBatch(tok(e.ctx, 10), b).Close()
			wantErr(t, err, fencedsql.ErrUnsupported)
			if after := e.row(1); after != before {
				t.Fatalf("row 1 %+v -> %+v: the named statement ran", before, after)
			}
		})
	}
}
