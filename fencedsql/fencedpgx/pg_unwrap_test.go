package fencedpgx_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/fencedpgx"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// What the caller sends on the raw connection fencedpgx hands out (Conn.Unwrap,
// Pool.Unwrap, Tx.Conn, Rows.Conn) is unseen, as on database/sql's sql.Conn.Raw: a
// SET search_path there makes "accounts" resolve to s2.accounts (nullable fencing
// columns), and a SET synchronous_commit = off turns off what the kept session check
// read once. Each hand-out re-arms the connection: the next guarded write through the
// fenced side is refused (ErrSchema; *SessionError for the setting) and writes
// nothing, though the connection's first guarded write had passed both checks.
func TestUnwrappedConnectionRearmsChecks(t *testing.T) {
	type execer interface {
		Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	}
	sets := []struct{ name, set string }{
		{"search_path", "SET search_path = s2, public"},
		{"synchronous_commit", "SET synchronous_commit = off"},
	}
	// Each way returns the fenced side to write through after the SET was sent on the
	// raw connection it hands out, and a cleanup.
	ways := []struct {
		name string
		run  func(t *testing.T, ctx context.Context, dsn, set string, write func(execer, uint64) error) (execer, func())
	}{
		{"Conn.Unwrap", func(t *testing.T, ctx context.Context, dsn, set string, write func(execer, uint64) error) (execer, func()) {
			c := newConn(t, ctx, dsn)
			if err := write(c, 60); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Unwrap().Exec(ctx, set); err != nil {
				t.Fatal(err)
			}
			return c, func() {}
		}},
		{"Pool.Unwrap", func(t *testing.T, ctx context.Context, dsn, set string, write func(execer, uint64) error) (execer, func()) {
			cfg, err := pgxpool.ParseConfig(dsn)
			if err != nil {
				t.Fatal(err)
			}
			cfg.MaxConns = 1
			pp, err := pgxpool.NewWithConfig(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(pp.Close)
			p, err := fencedpgx.Wrap(pp, fencedsql.Guard("accounts"))
			if err != nil {
				t.Fatal(err)
			}
			if err := write(p, 60); err != nil {
				t.Fatal(err)
			}
			if _, err := p.Unwrap().Exec(ctx, set); err != nil {
				t.Fatal(err)
			}
			return p, func() {}
		}},
		{"Tx.Conn", func(t *testing.T, ctx context.Context, dsn, set string, write func(execer, uint64) error) (execer, func()) {
			c := newConn(t, ctx, dsn)
			if err := write(c, 60); err != nil {
				t.Fatal(err)
			}
			tx, err := c.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Conn().Exec(ctx, set); err != nil {
				t.Fatal(err)
			}
			return tx, func() { _ = tx.Rollback(ctx) }
		}},
		{"Rows.Conn", func(t *testing.T, ctx context.Context, dsn, set string, write func(execer, uint64) error) (execer, func()) {
			c := newConn(t, ctx, dsn)
			if err := write(c, 60); err != nil {
				t.Fatal(err)
			}
			rows, err := c.Query(ctx, "SELECT id FROM accounts")
			if err != nil {
				t.Fatal(err)
			}
			pc := rows.Conn()
			rows.Close()
			if _, err := pc.Exec(ctx, set); err != nil {
				t.Fatal(err)
			}
			return c, func() {}
		}},
	}
	for _, w := range ways {
		for _, s := range sets {
			t.Run(w.name+"/"+s.name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				dsn := testdb.Postgres(t)
				raw := testdb.Open(t, "pgx", dsn,
					`CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
					`INSERT INTO accounts VALUES (1, 0, 0, 0)`,
					`CREATE SCHEMA s2`,
					`CREATE TABLE s2.accounts (id BIGINT PRIMARY KEY, balance BIGINT, fence_token BIGINT, version BIGINT)`,
					`INSERT INTO s2.accounts VALUES (1, 100, 50, 1)`,
				)
				write := func(e execer, token uint64) error {
					_, err := e.Exec(fencedsql.WithToken(ctx, token), `UPDATE accounts SET balance = $1 WHERE id = 1`, int64(token))
					return err
				}
				e, done := w.run(t, ctx, dsn, s.set, write)
				err := write(e, 10)
				done()
				var se *fencedsql.SessionError
				if !errors.Is(err, fencedsql.ErrSchema) || s.name == "synchronous_commit" && !errors.As(err, &se) {
					t.Errorf("guarded write (token 10) after %q on the connection %s handed out: %v; want ErrSchema (a *SessionError for the setting)", s.set, w.name, err)
				}
				var pub, s2bal, s2tok sql.NullInt64
				if err := raw.QueryRowContext(ctx, `SELECT (SELECT balance FROM public.accounts WHERE id = 1), balance, fence_token FROM s2.accounts WHERE id = 1`).Scan(&pub, &s2bal, &s2tok); err != nil {
					t.Fatal(err)
				}
				if pub.Int64 != 60 || s2bal.Int64 != 100 || s2tok.Int64 != 50 || !s2tok.Valid {
					t.Errorf("after the refused write: public.accounts balance %v (want 60), s2.accounts balance %v fence_token %v (want 100, 50)", pub, s2bal, s2tok)
				}
			})
		}
	}
}

func newConn(t *testing.T, ctx context.Context, dsn string) *fencedpgx.Conn {
	t.Helper()
	pc, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close(context.Background()) })
	c, err := fencedpgx.NewConn(pc, fencedsql.Guard("accounts"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}
