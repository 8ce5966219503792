package failover

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/internal/netproxy"
)

// TestServerChangeRecordsOtherSchemaGuard (red-team rt56d, held): after a server
// change the running pool reads the new server's records again (rereadRecords) and
// stops its writes when that server records as guarded a table it does not guard, or
// guards on other columns (docs/design.md G14, "The server behind a running pool"). The
// pool lists public.accounts; the new server (the promoted replica of an asynchronous
// pair) records s2.accounts, a same-named table in another schema carrying the guard's
// triggers on other columns (tok2, ver2), which the old primary lost in the tail.
// Oracle: through the running pool a tokenless INSERT into s2.accounts is refused
// (ErrNoToken, checked before any table check) and fenced writes to it, stale or not,
// are refused with a *SchemaError (ErrSchema) and change nothing; a pool opened afresh
// there guards it on tok2 (the stale writes change nothing, the current token's lands;
// the typing of its refusal is postgres: TestOtherSchemaNamesakeOtherColumns').
func TestServerChangeRecordsOtherSchemaGuard(t *testing.T) {
	env := needEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pair, err := NewPostgres(ctx, env, Async)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pair.Close() })
	addr := func(dsn string) string { return "127.0.0.1:" + portOf(dsn) }
	plain, err := sql.Open("pgx", pair.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	g := postgres.Dialect.(dialect.Guarder)
	ts := postgres.Dialect.(dialect.Tombstoner)
	stmts := []string{
		"CREATE TABLE public.accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"CREATE SCHEMA s2",
		"CREATE TABLE s2.accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, tok2 BIGINT NOT NULL DEFAULT 0, ver2 BIGINT NOT NULL DEFAULT 0)",
	}
	pub := dialect.TableName{Schema: "public", Name: "accounts"}
	s2 := dialect.TableName{Schema: "s2", Name: "accounts"}
	stmts = append(stmts, g.GuardDDL(pub, "fence_token", "version")...)
	stmts = append(stmts, ts.TombstoneDDL(pub, []dialect.KeyColumn{{Name: "id", Type: "bigint"}}, "fence_token")...)
	stmts = append(stmts, g.GuardDDL(s2, "tok2", "ver2")...)
	stmts = append(stmts, ts.TombstoneDDL(s2, []dialect.KeyColumn{{Name: "id", Type: "bigint"}}, "tok2")...)
	stmts = append(stmts, "INSERT INTO s2.accounts VALUES (1, 5, 60, 1)", "CREATE TABLE other_schema_marker (id int)")
	logicalExec(t, ctx, plain, stmts...)
	waitReplicaRow(ctx, t, "pgx", pair.replica.dsn(), "SELECT count(*) FROM pg_class WHERE relname = 'other_schema_marker'", pair.replica.srv)
	if err := pair.Detach(ctx); err != nil {
		t.Fatal(err)
	}
	// The tail (lost): schema s2 dropped on the old primary.
	logicalExec(t, ctx, plain, "DROP SCHEMA s2 CASCADE")

	proxy, err := netproxy.New(addr(pair.DSN()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	base := "postgres://fenced@" + proxy.Addr() + "/postgres?sslmode=disable&connect_timeout=5"
	route, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer route.Close()
	connector, err := route.Driver().(driver.DriverContext).OpenConnector(base)
	if err != nil {
		t.Fatal(err)
	}
	app := fencedsql.OpenDB(connector, fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard("public.accounts"))
	defer app.Close()
	if _, err := app.ExecContext(fencedsql.WithToken(ctx, 10), "INSERT INTO public.accounts (id, balance) VALUES (1, 1)"); err != nil {
		t.Fatalf("write on the old primary: %v", err)
	}
	if err := pair.Failover(ctx); err != nil {
		t.Fatal(err)
	}
	proxy.Retarget(addr(pair.DSN()))
	np, err := sql.Open("pgx", pair.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer np.Close()

	// A pool opened afresh on the new server: the reference.
	fresh := fencedsql.OpenDB(connector, fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard("public.accounts"))
	defer fresh.Close()
	_, ferr := fresh.ExecContext(ctx, "INSERT INTO s2.accounts (id, balance) VALUES (5, 1)")
	t.Logf("a pool opened on the new server, tokenless INSERT into s2.accounts: %v", ferr)

	var last error
	for i := 0; i < 20; i++ { // the pool's connections die with the route; retry until one reaches the new server
		_, last = app.ExecContext(ctx, "INSERT INTO s2.accounts (id, balance) VALUES (7, 1)")
		if last == nil || !lostConn(last) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	var n int
	if err := np.QueryRowContext(ctx, "SELECT count(*) FROM s2.accounts WHERE id = 7").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 || !errors.Is(last, fencedsql.ErrNoToken) {
		t.Errorf("after the server change, a tokenless INSERT into s2.accounts through the running pool: err %v, rows %d; want ErrNoToken, as a pool opened there (%v)", last, n, ferr)
	}
	for _, w := range []struct {
		q   string
		tok uint64
	}{
		{"UPDATE s2.accounts SET balance = 99 WHERE id = 1", 20},
		{"INSERT INTO s2.accounts (id, balance) VALUES (1, 98) ON CONFLICT (id) DO UPDATE SET balance = EXCLUDED.balance", 20},
		{"DELETE FROM s2.accounts WHERE id = 1", 20},
		{"UPDATE s2.accounts SET balance = 7 WHERE id = 1", 70},
	} {
		for _, p := range []struct {
			name string
			db   *sql.DB
		}{{"running", app}, {"fresh", fresh}} {
			_, err := p.db.ExecContext(fencedsql.WithToken(ctx, w.tok), w.q)
			var bal, tok int64
			if err := np.QueryRowContext(ctx, "SELECT balance, tok2 FROM s2.accounts WHERE id = 1").Scan(&bal, &tok); err != nil {
				t.Fatalf("%s pool, after %s under %d: %v", p.name, w.q, w.tok, err)
			}
			t.Logf("%s pool: %s under %d: %v; balance %d tok2 %d", p.name, w.q, w.tok, err, bal, tok)
			var se *fencedsql.SchemaError
			switch {
			case p.name == "running" && !errors.As(err, &se):
				t.Errorf("running pool after the server change: %s under %d: %v (%T); want the pool stopped with a *SchemaError", w.q, w.tok, err, err)
			case w.tok == 20 && (bal != 5 && bal != 7 || tok != 60 && tok != 70):
				t.Errorf("FAIL-OPEN (%s pool): stale %s under 20 changed the row: balance %d tok2 %d", p.name, w.q, bal, tok)
			case p.name == "fresh" && w.tok == 70 && (err != nil || bal != 7 || tok != 70):
				t.Errorf("fresh pool: %s under the current token 70, fenced on tok2: err %v, balance %d tok2 %d", w.q, err, bal, tok)
			}
		}
	}
}

// lostConn reports whether err is a connection lost with the moved route.
func lostConn(err error) bool {
	if errors.Is(err, driver.ErrBadConn) {
		return true
	}
	for _, w := range []string{"connection", "EOF", "broken pipe", "reset by peer", "closed"} {
		if strings.Contains(err.Error(), w) {
			return true
		}
	}
	return false
}
