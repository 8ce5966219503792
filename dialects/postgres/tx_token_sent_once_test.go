package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// namedText is a string of a named type: the wrapper does not read it as statement
// text (the driver may make its own text of it).
type namedText string

// TestTxTokenRecordedOncePerStatement: in a transaction whose statements carried two
// tokens, the wrapper records the token once before each statement it sends, on every
// path: not at PREPARE (which runs nothing), and once, not twice, for a statement whose
// bound value is read as statement text (judged a second time as that text) and for a
// prepared one's execution. A statement refused before it is sent records nothing.
func TestTxTokenRecordedOncePerStatement(t *testing.T) {
	ctx := context.Background()
	dsn, raw := txTokSchema(t)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cnt := &fencetest.PgxCounter{Substr: "fencedsql_guard.tx_token"} // the recordings of the transaction's token
	cfg.Tracer = cnt
	db := fencedsql.OpenDB(stdlib.GetConnector(*cfg), fencedsql.WithDialect(postgres.Dialect),
		fencedsql.Guard("par"), fencedsql.Guard("kid"), fencedsql.WithDDL(true))
	t.Cleanup(func() { db.Close() })
	testdb.Exec(t, raw, "INSERT INTO par (id) VALUES (1)", "INSERT INTO kid (id, pid) VALUES (1, 1)")
	l1, _, l3 := fencetest.ThreeLeases(t, memlock.New(), "once")
	ctx1, ctx3 := fencedsql.WithLease(ctx, l1), fencedsql.WithLease(ctx, l3)
	tx, err := db.BeginTx(ctx1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	if _, err := tx.ExecContext(ctx1, "UPDATE kid SET balance = balance + 1 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if got := cnt.N(); got != 0 {
		t.Fatalf("a transaction of one token recorded its token %d times; want none", got)
	}
	// Statement text as a bound value: DDL with a placeholder (plan.Plan.TextArgs),
	// judged as its literal form before it is sent.
	const ctas = "CREATE TEMP TABLE once_t AS SELECT $1::text AS x"
	steps := []struct {
		name string
		want int64
		run  func() error
	}{
		{"raising SELECT", 1, func() error { _, err := tx.ExecContext(ctx3, "SELECT 1"); return err }},
		{"guarded UPDATE", 1, func() error {
			_, err := tx.ExecContext(ctx3, "UPDATE kid SET balance = balance + 1 WHERE id = 1")
			return err
		}},
		{"query", 1, func() error {
			rows, err := tx.QueryContext(ctx3, "SELECT id FROM par")
			if err == nil {
				rows.Close()
			}
			return err
		}},
		{"bound statement text", 1, func() error { _, err := tx.ExecContext(ctx3, ctas, "a"); return err }},
		{"prepare, then two executions of a statement with bound text", 2, func() error {
			st, err := tx.PrepareContext(ctx3, "CREATE TEMP TABLE IF NOT EXISTS once_u AS SELECT $1::text AS x")
			if err != nil {
				return err
			}
			defer st.Close()
			for range 2 {
				if _, err := st.ExecContext(ctx3, "b"); err != nil {
					return err
				}
			}
			return nil
		}},
		{"bound statement text of a type the wrapper cannot read: refused, not sent", 0, func() error {
			_, err := tx.ExecContext(ctx3, ctas, namedText("a"))
			if !errors.Is(err, fencedsql.ErrUnsupported) {
				return fmt.Errorf("want ErrUnsupported, got %v", err)
			}
			return nil
		}},
		{"prepared guarded UPDATE, one execution", 1, func() error {
			st, err := tx.PrepareContext(ctx3, "UPDATE kid SET balance = balance + 1 WHERE id = $1")
			if err != nil {
				return err
			}
			defer st.Close()
			_, err = st.ExecContext(ctx3, 1)
			return err
		}},
	}
	for _, s := range steps {
		before := cnt.N()
		if err := s.run(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := cnt.N() - before; got != s.want {
			t.Errorf("%s: the transaction's token was recorded %d times; want %d (once per statement sent)", s.name, got, s.want)
		}
	}
	before := cnt.N()
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := cnt.N() - before; got != 1 {
		t.Errorf("COMMIT: recorded %d times; want 1 (deferred triggers may delete rows)", got)
	}
}
