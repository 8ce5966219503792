package fencedpgx_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	fschema "github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
)

// pgx's own lexer (docs/design.md, "The drivers' own lexers"): under the simple protocol
// pgx substitutes the arguments into the text with its own lexer (internal/sanitize),
// which reads name'\' as an E-string (any "e'" opens one) and so reads ' $1 ' after it
// as code where PostgreSQL and the planner read a literal. The caller's value, quoted by
// pgx, would end PostgreSQL's literal and comment out the fencing. Every fenced text is
// checked against pgx's reading before it is sent (dialect.SendChecker): refused with
// ErrUnsupported, nothing sent. (Red-team rts F1, F2.)

// desyncText is F2's text: name'\' is a standard literal to PostgreSQL, an E-string to pgx.
const desyncText = `UPDATE accounts SET balance = length(name'\' || ' $1 ' || E'\'') + 0 * length($1::text) WHERE id = 1`

// wantRefusedUnchanged asserts err is ErrUnsupported and row 1 is as seeded (token 50).
func wantRefusedUnchanged(t *testing.T, e *pgEnv, err error) {
	t.Helper()
	if got := e.row(1); got.balance != 100 || got.token != 50 {
		t.Fatalf("FAIL-OPEN: stale token 10 wrote row 1 (err=%v): %+v", err, got)
	}
	if !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Fatalf("err = %v, want ErrUnsupported", err)
	}
}

// installGuard installs the PostgreSQL guard on accounts (schema.Check's fix).
func installGuard(t *testing.T, e *pgEnv) {
	t.Helper()
	std, err := sql.Open("pgx", e.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer std.Close()
	fencetest.Guard(t, e.ctx, std, postgres.Dialect, fschema.GuardSpec{Table: "accounts"})
}

// TestDriverLexerSimpleProtocolDesync: the DSN's simple_protocol.
func TestDriverLexerSimpleProtocolDesync(t *testing.T) {
	e := newPGEnv(t, "simple_protocol")
	e.seed(50, 1)
	_, err := e.db.Exec(tok(e.ctx, 10), desyncText, ") --")
	wantRefusedUnchanged(t, e, err)
}

// TestDriverLexerSimpleProtocolDesyncGuarded: the same with the database guard
// installed, where the caller's SQL would advance the version itself.
func TestDriverLexerSimpleProtocolDesyncGuarded(t *testing.T) {
	e := newPGEnv(t, "simple_protocol")
	installGuard(t, e)
	e.seed(50, 1)
	_, err := e.db.Exec(tok(e.ctx, 10), desyncText, `), "version" = "version" + 1 --`)
	wantRefusedUnchanged(t, e, err)
}

// TestDriverLexerPerCallSimpleProtocol: fencedpgx keeps a pgx.QueryExecModeSimpleProtocol
// argument for sending, so the text is sanitized by pgx on the default DSN too: the
// check does not depend on the mode.
func TestDriverLexerPerCallSimpleProtocol(t *testing.T) {
	e := newPGEnv(t, "cache_statement")
	e.seed(50, 1)
	_, err := e.db.Exec(tok(e.ctx, 10), desyncText, pgx.QueryExecModeSimpleProtocol, ") --")
	wantRefusedUnchanged(t, e, err)
	// A Query (RETURNING) and a transaction's statement take the same path.
	rows, err := e.db.Query(tok(e.ctx, 10), desyncText+" RETURNING id", pgx.QueryExecModeSimpleProtocol, ") --")
	if err == nil {
		rows.Close()
		err = rows.Err()
	}
	wantRefusedUnchanged(t, e, err)
}

// TestDriverLexerBatch: a batch's fenced steps are checked before anything of the batch
// is sent.
func TestDriverLexerBatch(t *testing.T) {
	e := newPGEnv(t, "simple_protocol")
	e.seed(50, 1)
	b := &pgx.Batch{}
	b.Queue("UPDATE accounts SET balance = 1 WHERE id = 1")
	b.Queue(desyncText, ") --")
	err := e.db.SendBatch(tok(e.ctx, 10), b).Close()
	wantRefusedUnchanged(t, e, err)
}

// TestDriverLexerPassThroughInjection: a statement that writes no guarded table, sent
// as written with an argument, under the simple protocol: pgx substitutes the value
// where PostgreSQL reads a literal, and the value's SQL is a second statement that
// writes the guarded table unfenced. The pass-through check refuses it.
func TestDriverLexerPassThroughInjection(t *testing.T) {
	e := newPGEnv(t, "simple_protocol")
	e.seed(50, 1)
	q := `SELECT length(name'\' || ' $1 ' || E'\'')`
	_, err := e.db.Exec(e.ctx, q, "); UPDATE accounts SET balance = 0; --")
	wantRefusedUnchanged(t, e, err)
	// Ordinary pass-through texts with arguments are untouched.
	var n int64
	if err := e.db.QueryRow(e.ctx, "SELECT length($1::text) + length(E'x\\'y') + length('a$b')", "abc").Scan(&n); err != nil || n != 3+3+3 {
		t.Fatalf("ordinary pass-through: n=%d err=%v", n, err)
	}
}

// TestDriverLexerStdlibNamedArgsGuarded: database/sql over pgx's stdlib driver, guard
// installed. pgx would take a pgx.NamedArgs first argument as a rewriter that renumbers
// the @names and replaces the arguments, the token among them (red-team rts F1):
// refused, and honest named-argument use gets the same clear refusal.
func TestDriverLexerStdlibNamedArgsGuarded(t *testing.T) {
	e := newPGEnv(t, "cache_statement")
	installGuard(t, e)
	e.seed(50, 1)
	c, err := stdlib.GetDefaultDriver().(driver.DriverContext).OpenConnector(e.dsn)
	if err != nil {
		t.Fatal(err)
	}
	db := fencedsql.OpenDB(c, fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard("accounts"))
	defer db.Close()
	ctx := tok(e.ctx, 10)
	q := `UPDATE accounts SET balance = 0 WHERE id = @id AND @tok::bigint > 0 AND $1::bigint > 0`
	_, err = db.ExecContext(ctx, q, pgx.NamedArgs{"id": 1, "tok": 1000000})
	wantRefusedUnchanged(t, e, err)
	_, err = db.ExecContext(ctx, "UPDATE accounts SET balance = 0 WHERE id = @id", pgx.NamedArgs{"id": 1})
	wantRefusedUnchanged(t, e, err)
	_, err = db.ExecContext(ctx, "UPDATE accounts SET balance = 0 WHERE id = $1", pgx.QueryExecModeSimpleProtocol, 1)
	wantRefusedUnchanged(t, e, err)
	// Named arguments on a statement that writes no guarded table still work.
	var n int64
	if err := db.QueryRowContext(context.Background(), "SELECT @a::int + 1", pgx.NamedArgs{"a": 41}).Scan(&n); err != nil || n != 42 {
		t.Fatalf("NamedArgs pass-through: n=%d err=%v", n, err)
	}
}
