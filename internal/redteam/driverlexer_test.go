package redteam

// The client drivers' own lexers (docs/design.md, "The drivers' own lexers"; red-team
// pass rts, F1–F3): pgx (simple protocol) and go-sql-driver/mysql (interpolateParams)
// substitute the arguments into the fenced text with their own lexers, and pgx takes
// some argument values as options. Where the driver's reading differs from the
// server's, an argument lands inside what the server reads as a literal and its value
// becomes SQL that comments the fencing out. Every statement the wrapper sends is
// checked against the driver's reading first (dialect.SendChecker): refused with
// ErrUnsupported, nothing sent, nothing changed.

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	fmy "github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	fschema "github.com/fencedsql/fencedsql/fencedsql/schema"
)

// wantUnchangedRefusal asserts err is ErrUnsupported and no row of d changed.
func wantUnchangedRefusal(t *testing.T, d *dbs, err error) {
	t.Helper()
	var n int
	q := fmt.Sprintf("SELECT count(*) FROM accounts WHERE balance <> id * 100 OR fence_token <> %d", seedToken)
	if e := d.raw.QueryRowContext(context.Background(), q).Scan(&n); e != nil {
		t.Fatal(e)
	}
	if n > 0 {
		t.Fatalf("FAIL-OPEN: stale token %d changed %d rows (err=%v)", staleToken, n, err)
	}
	if !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Fatalf("err = %v, want ErrUnsupported", err)
	}
}

// TestDriverLexerPgxNamedArgs (F1): through database/sql on pgx's stdlib driver a
// pgx.NamedArgs argument is a pgx.QueryRewriter: pgx would rewrite the text's @names to
// $1, $2, … and replace the whole argument list, the token the wrapper appended among
// them, so that the caller's @tok takes the token's place ($2). The other option types
// (QueryExecMode, QueryResultFormats) would shift the arguments. All refused on a
// fenced statement.
func TestDriverLexerPgxNamedArgs(t *testing.T) {
	d := freshDB(t, postgresBackend(), entry{})
	w, _ := d.open(true, nil)
	ctx := tokenCtx(d.ctx, staleToken)
	for _, c := range []struct {
		q    string
		args []any
	}{
		{`UPDATE accounts SET balance = 0 WHERE id = @id AND @tok::bigint > 0 AND $1::bigint > 0`, []any{pgx.NamedArgs{"id": 1, "tok": 1000000}}},
		{`UPDATE accounts SET balance = 0 WHERE id = @id AND @tok::bigint > 0 AND $1::bigint > 0`, []any{pgx.StrictNamedArgs{"id": 1, "tok": 1000000}}},
		{`UPDATE accounts SET balance = 0 WHERE id = @id`, []any{pgx.NamedArgs{"id": 1}}},
		{`UPDATE accounts SET balance = 0 WHERE id = $1`, []any{pgx.QueryExecModeExec, 1}},
		{`UPDATE accounts SET balance = 0 WHERE id = $1`, []any{pgx.QueryResultFormats{1}, 1}},
		{`DELETE FROM accounts WHERE id = $1`, []any{pgx.QueryExecModeSimpleProtocol, 1}},
	} {
		_, err := w.ExecContext(ctx, c.q, c.args...)
		wantUnchangedRefusal(t, d, err)
	}
}

// TestDriverLexerPgxContinuation (F2a): with default_query_exec_mode=simple_protocol pgx
// does not know PostgreSQL's continuation of E'x' over a newline: it reads the next line
// as a plain literal '\' then code, PostgreSQL (and the planner) as one escaped literal.
func TestDriverLexerPgxContinuation(t *testing.T) {
	d := freshDB(t, postgresBackend(), entry{dsn: "default_query_exec_mode=simple_protocol"})
	w, _ := d.open(true, nil)
	q := "UPDATE accounts SET balance = length(E'x'\n'\\' $1 \\'') + 0 * length($1::text)"
	_, err := w.ExecContext(tokenCtx(d.ctx, staleToken), q, ") --")
	wantUnchangedRefusal(t, d, err)
}

// TestDriverLexerPgxTypedLiteral (F2b): pgx opens an E-string at any e', name'\' too.
func TestDriverLexerPgxTypedLiteral(t *testing.T) {
	d := freshDB(t, postgresBackend(), entry{dsn: "default_query_exec_mode=simple_protocol"})
	w, _ := d.open(true, nil)
	q := `UPDATE accounts SET balance = length(name'\' || ' $1 ' || E'\'') + 0 * length($1::text)`
	_, err := w.ExecContext(tokenCtx(d.ctx, staleToken), q, ") --")
	wantUnchangedRefusal(t, d, err)
}

// TestDriverLexerPgxPerCallSimpleProtocol (F1+F2b): no DSN setting, the mode passed as
// the first argument, which pgx takes as an option and removes.
func TestDriverLexerPgxPerCallSimpleProtocol(t *testing.T) {
	d := freshDB(t, postgresBackend(), entry{})
	w, _ := d.open(true, nil)
	q := `UPDATE accounts SET balance = 0 * $2::bigint + length(name'\' || ' $1 ')`
	_, err := w.ExecContext(tokenCtx(d.ctx, staleToken), q, pgx.QueryExecModeSimpleProtocol, ") --")
	wantUnchangedRefusal(t, d, err)
}

// TestDriverLexerPgxDollarInIdentifier (F2c): no backslash. PostgreSQL reads a$$ as one
// identifier, pgx as a and the opening of a $$ string closed by the $$ inside the
// literal '$$ $1 '.
func TestDriverLexerPgxDollarInIdentifier(t *testing.T) {
	d := freshDB(t, postgresBackend(), entry{dsn: "default_query_exec_mode=simple_protocol"})
	w, _ := d.open(true, nil)
	q := `UPDATE accounts AS a$$ SET balance = length('$$ $1 ') /*'*/ + 0 * length($1::text)`
	_, err := w.ExecContext(tokenCtx(d.ctx, staleToken), q, ") --")
	wantUnchangedRefusal(t, d, err)
}

// TestDriverLexerPgxPassThroughInjection: a statement that names no guarded table,
// sent as written with an argument under the simple protocol: the argument would be
// a second statement that writes the guarded table unfenced.
func TestDriverLexerPgxPassThroughInjection(t *testing.T) {
	d := freshDB(t, postgresBackend(), entry{dsn: "default_query_exec_mode=simple_protocol"})
	w, _ := d.open(true, nil)
	q := `SELECT length(name'\' || ' $1 ' || E'\'')`
	_, err := w.ExecContext(tokenCtx(d.ctx, staleToken), q, "); UPDATE accounts SET balance = 0; --")
	wantUnchangedRefusal(t, d, err)
}

// TestDriverLexerMySQLInterpolateParams (F3): with interpolateParams=true the driver
// starts a -- comment only before a blank, \t, \r or \n; MariaDB (and the planner) also
// before \v. The driver substitutes the caller's value for a ? MariaDB reads inside a
// literal, whose quote ends it: ")) #" comments out the fencing.
func TestDriverLexerMySQLInterpolateParams(t *testing.T) {
	d := freshDB(t, mysqlBackend(), entry{dsn: "interpolateParams=true"})
	w, _ := d.open(true, nil)
	q := "UPDATE accounts SET balance = length(CONCAT(--\v '\n'x ? ', ? /*'*/))"
	_, err := w.ExecContext(tokenCtx(d.ctx, staleToken), q, ")) #")
	wantUnchangedRefusal(t, d, err)
	// Refused whatever interpolateParams is (the text is the same either way).
	d2 := freshDB(t, mysqlBackend(), entry{})
	w2, _ := d2.open(true, nil)
	_, err = w2.ExecContext(tokenCtx(d2.ctx, staleToken), q, ")) #")
	wantUnchangedRefusal(t, d2, err)
}

// TestDriverLexerMySQLInterpolateParamsGuarded (F3): MariaDB's guard installed; the
// caller's value would advance the version itself.
func TestDriverLexerMySQLInterpolateParamsGuarded(t *testing.T) {
	d := freshDB(t, mysqlBackend(), entry{dsn: "interpolateParams=true"})
	reps, err := fschema.Check(d.ctx, d.raw, fmy.Dialect, fschema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range reps[0].Fix {
		if _, err := d.raw.ExecContext(d.ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	w, _ := d.open(true, nil)
	q := "UPDATE accounts SET balance = length(CONCAT(--\v '\n'x ? ', ? /*'*/)) WHERE id = 1"
	_, err = w.ExecContext(tokenCtx(d.ctx, staleToken), q, ")), `version` = `version` + 1 #")
	wantUnchangedRefusal(t, d, err)
}

// TestDriverLexerMySQLPassThroughInjection: a statement that names no guarded table,
// sent as written with an argument under interpolateParams (and multiStatements): the
// driver would put the value where the server reads a literal, and the value's SQL
// would be a second statement that writes the guarded table unfenced.
func TestDriverLexerMySQLPassThroughInjection(t *testing.T) {
	d := freshDB(t, mysqlBackend(), entry{dsn: "interpolateParams=true&multiStatements=true"})
	w, _ := d.open(true, nil)
	q := "SELECT length(CONCAT(--\v '\n'x ? ', ? /*'*/))"
	_, err := w.ExecContext(d.ctx, q, ")); UPDATE accounts SET balance = 0; #")
	wantUnchangedRefusal(t, d, err)
}
