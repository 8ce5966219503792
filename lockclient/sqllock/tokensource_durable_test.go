package sqllock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// wantSchemaErr fails t unless err is a *SchemaError (ErrSchema, ErrInvalidConfig) and
// not ErrUnavailable, which Acquire would retry until its deadline.
func wantSchemaErr(t *testing.T, what string, err error) {
	t.Helper()
	var se *sqllock.SchemaError
	if !errors.As(err, &se) || !errors.Is(err, sqllock.ErrSchema) || !errors.Is(err, lockclient.ErrInvalidConfig) ||
		errors.Is(err, lockclient.ErrUnavailable) {
		t.Fatalf("%s: %v, want a *SchemaError (ErrSchema, ErrInvalidConfig, not ErrUnavailable)", what, err)
	}
}

// An UNLOGGED token sequence is reset to its start value by crash recovery and has no
// value on a standby, so after a crash restart or failover the lock service would grant
// tokens below those the guarded rows hold; an UNLOGGED lease table forgets every
// holder. CheckTable and the first grant of a Backend refuse both with a *SchemaError.
func TestTokenSourceUnloggedRefused(t *testing.T) {
	srv := servers[0]
	if srv.name != "postgres" {
		t.Fatal("servers[0] is not postgres")
	}
	for _, alter := range []string{
		`ALTER SEQUENCE fencedsql_locks_token_seq SET UNLOGGED`,
		`ALTER TABLE fencedsql_locks SET UNLOGGED`,
	} {
		t.Run(alter, func(t *testing.T) {
			dsn, admin := srv.fresh(t, "")
			ctx := ctxT(t, 30*time.Second)
			if _, err := admin.ExecContext(ctx, alter); err != nil {
				t.Fatal(err)
			}
			b, err := sqllock.New(srv.open(t, dsn))
			if err != nil {
				t.Fatal(err)
			}
			wantSchemaErr(t, "CheckTable", b.CheckTable(ctx))
			_, err = openSession(t, b).TryAcquire(ctx, "k")
			wantSchemaErr(t, "TryAcquire", err)
		})
	}
}

// A MySQL/MariaDB lease, counter or waiter table that is not InnoDB (MEMORY is emptied
// at every restart: the token counter would start again from nothing) is refused by
// CheckTable and the first grant of a Backend.
func TestTokenSourceEngineRefused(t *testing.T) {
	srv := servers[1]
	if srv.name != "mariadb" {
		t.Fatal("servers[1] is not mariadb")
	}
	for _, table := range []string{"fencedsql_locks_token", "fencedsql_locks"} {
		t.Run(table, func(t *testing.T) {
			dsn, admin := srv.fresh(t, "")
			ctx := ctxT(t, 30*time.Second)
			if _, err := admin.ExecContext(ctx, "ALTER TABLE "+table+" ENGINE=MEMORY"); err != nil {
				t.Fatal(err)
			}
			b, err := sqllock.New(srv.open(t, dsn))
			if err != nil {
				t.Fatal(err)
			}
			wantSchemaErr(t, "CheckTable", b.CheckTable(ctx))
			_, err = openSession(t, b).TryAcquire(ctx, "k")
			wantSchemaErr(t, "TryAcquire", err)
		})
	}
}

// A token source at its end makes every grant fail; that is a configuration error, not
// unavailability. PostgreSQL: a sequence near its MAXVALUE is refused by the check, and
// one that reaches it later (nextval's SQLSTATE 2200H) is answered with a *SchemaError
// by TryAcquire and Acquire. MySQL: the BIGINT counter's overflow likewise.
func TestTokenSourceExhaustedIsSchemaError(t *testing.T) {
	t.Run("postgres-near-maxvalue", func(t *testing.T) {
		srv := servers[0]
		dsn, admin := srv.fresh(t, "")
		ctx := ctxT(t, 30*time.Second)
		if _, err := admin.ExecContext(ctx, `ALTER SEQUENCE fencedsql_locks_token_seq MAXVALUE 1000`); err != nil {
			t.Fatal(err)
		}
		b, err := sqllock.New(srv.open(t, dsn))
		if err != nil {
			t.Fatal(err)
		}
		wantSchemaErr(t, "CheckTable", b.CheckTable(ctx))
	})
	t.Run("postgres-floor-above-maxvalue", func(t *testing.T) {
		srv := servers[0]
		dsn, admin := srv.fresh(t, "")
		ctx := ctxT(t, 30*time.Second)
		if _, err := admin.ExecContext(ctx, `ALTER SEQUENCE fencedsql_locks_token_seq MAXVALUE 2000000`); err != nil {
			t.Fatal(err)
		}
		b, err := sqllock.New(srv.open(t, dsn))
		if err != nil {
			t.Fatal(err)
		}
		wantSchemaErr(t, "RaiseFloor above MAXVALUE", b.RaiseFloor(ctx, 3000000))
	})
	exhaust := map[string]string{
		"postgres": `ALTER SEQUENCE fencedsql_locks_token_seq MAXVALUE 2`,
		"mariadb":  `UPDATE fencedsql_locks_token SET v = 9223372036854775807 WHERE id = 1`,
	}
	forEachServer(t, func(t *testing.T, srv server) {
		dsn, admin := srv.fresh(t, "")
		ctx := ctxT(t, 30*time.Second)
		b, err := sqllock.New(srv.open(t, dsn))
		if err != nil {
			t.Fatal(err)
		}
		s := openSession(t, b)
		grantOne(t, s, "k1") // the first grant's check passes
		grantOne(t, s, "k2") // token 2: the sequence is then at MAXVALUE 2
		if _, err := admin.ExecContext(ctx, exhaust[srv.name]); err != nil {
			t.Fatal(err)
		}
		_, err = s.TryAcquire(ctx, "k3")
		wantSchemaErr(t, "TryAcquire at the token source's end", err)
		c := lockclient.New(b)
		t.Cleanup(func() { c.Close(ctx) })
		start := time.Now()
		_, err = c.Acquire(ctxT(t, 20*time.Second), "k4")
		wantSchemaErr(t, "Acquire at the token source's end", err)
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("Acquire took %v: it retried", d)
		}
	})
}

// On MySQL/MariaDB a token counter without its row (id = 1 of <table>_token) is a
// configuration error: CheckTable and every grant return a *SchemaError (ErrSchema,
// lockclient.ErrInvalidConfig) naming the row, and Acquire returns it at once instead of
// retrying it as ErrUnavailable until its deadline.
func TestMySQLMissingCounterRowIsSchemaError(t *testing.T) {
	for _, srv := range servers {
		if srv.dialect != sqllock.MySQL {
			continue
		}
		dsn, admin := srv.fresh(t, "")
		ctx := ctxT(t, 30*time.Second)
		b, err := sqllock.New(srv.open(t, dsn))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := admin.ExecContext(ctx, "DELETE FROM fencedsql_locks_token"); err != nil {
			t.Fatal(err)
		}
		cerr := b.CheckTable(ctx)
		wantSchemaErr(t, "CheckTable", cerr)
		if !strings.Contains(cerr.Error(), "the row of the token counter") {
			t.Fatalf("CheckTable = %v, want the missing counter row named", cerr)
		}
		_, terr := openSession(t, b).TryAcquire(ctx, "k")
		wantSchemaErr(t, "TryAcquire", terr)
		c := lockclient.New(b, lockclient.WithTTL(5*time.Second))
		defer c.Close(context.Background())
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		start := time.Now()
		_, aerr := c.Acquire(actx, "k")
		wantSchemaErr(t, "Acquire", aerr)
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("Acquire took %v to fail: retried", d)
		}
	}
}
