// The lease table: keys it cannot store, CreateTable and its namespaces, dialect detection.

package sqllock_test

import (
	"database/sql"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/locktest"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// Keys the table cannot store are refused before any statement, and are not ErrHeld.
func TestOverlongKeyRefused(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv server) {
		n := newNamespace(t, srv)
		ctx := ctxT(t, 30*time.Second)
		a := locktest.OpenSession(t, n.Backend("a"), "a", time.Minute)
		if _, err := a.TryAcquire(ctx, strings.Repeat("x", sqllock.MaxKeyLen+1)); err == nil || errors.Is(err, lockclient.ErrHeld) {
			t.Fatalf("TryAcquire of an over-long key = %v", err)
		}
	})
}

// CreateTable is idempotent and safe to run concurrently; tables with other names (and
// schema-qualified ones) are independent lock namespaces with their own token source.
func TestCreateTable(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv server) {
		t.Parallel()
		dsn, admin := srv.fresh(t, "")
		ctx := ctxT(t, 60*time.Second)
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- sqllock.CreateTable(ctx, admin, srv.dialect, "")
				errs <- sqllock.CreateTable(ctx, admin, srv.dialect, "other_locks")
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("concurrent CreateTable: %v", err)
			}
		}
		qualified := "public.q_locks"
		if srv.dialect == sqllock.MySQL {
			var dbname string
			if err := admin.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&dbname); err != nil {
				t.Fatal(err)
			}
			qualified = dbname + ".q_locks"
		}
		if err := sqllock.CreateTable(ctx, admin, srv.dialect, qualified); err != nil {
			t.Fatal(err)
		}
		db := srv.open(t, dsn)
		tok := map[string]uint64{}
		for _, table := range []string{"", "other_locks", qualified} {
			opts := []sqllock.Option{}
			if table != "" {
				opts = append(opts, sqllock.WithTable(table))
			}
			b, err := sqllock.New(db, opts...)
			if err != nil {
				t.Fatal(err)
			}
			s := locktest.OpenSession(t, b, "x", time.Minute)
			g, err := s.TryAcquire(ctx, "k") // the same key in each table
			if err != nil {
				t.Fatalf("table %q: %v", table, err)
			}
			tok[table] = g.Token
		}
		for table, tk := range tok {
			if tk != 1 {
				t.Fatalf("table %q: first token %d, want 1 (one sequence per table)", table, tk)
			}
		}
		for _, bad := range []string{"a;b", "x.y.z", `"q"`, "1abc", strings.Repeat("n", 49)} {
			if _, err := sqllock.New(db, sqllock.WithTable(bad)); err == nil {
				t.Fatalf("New accepted table name %q", bad)
			}
		}
	})
}

func TestDialectDetection(t *testing.T) {
	pg, err := sql.Open("pgx", "postgres://localhost/x")
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	my, err := sql.Open("mysql", "u@tcp(localhost:1)/x")
	if err != nil {
		t.Fatal(err)
	}
	defer my.Close()
	for _, c := range []struct {
		db   *sql.DB
		want sqllock.Dialect
	}{{pg, sqllock.Postgres}, {my, sqllock.MySQL}} {
		b, err := sqllock.New(c.db)
		if err != nil {
			t.Fatal(err)
		}
		if b.Dialect() != c.want || b.Table() != sqllock.DefaultTable {
			t.Fatalf("dialect %v table %q, want %v %q", b.Dialect(), b.Table(), c.want, sqllock.DefaultTable)
		}
	}
	b, err := sqllock.New(my, sqllock.WithDialect(sqllock.Postgres), sqllock.WithTable("s.t"))
	if err != nil || b.Dialect() != sqllock.Postgres || b.Table() != "s.t" {
		t.Fatalf("WithDialect/WithTable: %v %v %v", b, err, b.Dialect())
	}
}

// A token source lost while its lease table still holds grants — PostgreSQL: the sequence
// <table>_token_seq dropped; MySQL/MariaDB: the counter row of <table>_token deleted — is
// reported by CheckTable as a *SchemaError whose text says that CreateTable re-creates it
// and that the floor must then be raised; CreateTable re-creates it at the highest token
// of the lease table, so the next grant's token is above every token the table holds (a
// live holder's here), not 1 (G14).
func TestCreateTableReseedsLostTokenSourceAboveLeaseTable(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv server) {
		dsn, admin := srv.fresh(t, "")
		ctx := ctxT(t, 30*time.Second)
		b, err := sqllock.New(srv.open(t, dsn))
		if err != nil {
			t.Fatal(err)
		}
		if err := b.RaiseFloor(ctx, 500); err != nil {
			t.Fatal(err)
		}
		s := openSession(t, b)
		held := grantOne(t, s, "held") // a live holder, token 501
		if held <= 500 {
			t.Fatalf("token %d after RaiseFloor(500)", held)
		}
		// The token source is lost (a DBA's clean-up, a partial restore).
		lose := `DROP SEQUENCE fencedsql_locks_token_seq`
		if srv.dialect == sqllock.MySQL {
			lose = "DELETE FROM fencedsql_locks_token"
		}
		if _, err := admin.ExecContext(ctx, lose); err != nil {
			t.Fatal(err)
		}
		cerr := b.CheckTable(ctx)
		wantSchemaErr(t, "CheckTable after the loss", cerr)
		if !strings.Contains(cerr.Error(), "sqllock.CreateTable") || !strings.Contains(cerr.Error(), "raise the floor") {
			t.Fatalf("CheckTable after the loss: %v; want the fix: CreateTable, then raise the floor", cerr)
		}
		if err := sqllock.CreateTable(ctx, admin, srv.dialect, ""); err != nil {
			t.Fatal(err)
		}
		b2, err := sqllock.New(srv.open(t, dsn))
		if err != nil {
			t.Fatal(err)
		}
		if err := b2.CheckTable(ctx); err != nil {
			t.Fatalf("CheckTable after CreateTable: %v", err)
		}
		if last, err := b2.LastToken(ctx); err != nil || last != held {
			t.Fatalf("LastToken after CreateTable = %d, %v; want %d, the highest token of the lease table", last, err, held)
		}
		if g := grantOne(t, openSession(t, b2), "other"); g <= held {
			t.Fatalf("after the token source was lost and CreateTable re-created it, a grant got token %d, "+
				"at or below token %d of a live holder in the same lease table", g, held)
		}
	})
}
