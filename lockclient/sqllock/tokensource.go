package sqllock

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// The PostgreSQL token sequence must hand out values in call order across every
// connection: CACHE 1 (a larger cache gives each connection its own block of values,
// so a later grant on another connection can draw a smaller one), NO CYCLE (no wrap
// back to MINVALUE) and a positive INCREMENT. DDL creates it so, but with CREATE
// SEQUENCE IF NOT EXISTS, which keeps a sequence that already exists (a DBA's tuning,
// a restored dump); the backend therefore reads its settings before trusting it.

// errNoTokenSeq: the PostgreSQL token sequence does not exist (the statements that use
// it report that themselves).
var errNoTokenSeq = errors.New("sqllock: the token sequence does not exist")

// checkTokenSeq reads the settings of the PostgreSQL token sequence: nil when they keep
// tokens in grant order, a *SchemaError saying what is wrong otherwise, errNoTokenSeq
// when it does not exist, or the database's error when it could not answer. It does nothing
// on MySQL, whose counter row is incremented under its row lock (no cache, no cycle).
func (b *Backend) checkTokenSeq(ctx context.Context) error {
	if b.dialect != Postgres {
		return nil
	}
	seq := b.table.with("_token_seq")
	q := `SELECT s.seqcache, s.seqcycle, s.seqincrement FROM pg_catalog.pg_sequence s WHERE s.seqrelid = to_regclass($1::text)`
	args := []any{seq.quoted(Postgres)}
	if h := statementHook.Load(); h != nil {
		(*h)(q, args)
	}
	var cache, incr int64
	var cycle bool
	err := b.db.QueryRowContext(ctx, q, args...).Scan(&cache, &cycle, &incr)
	if errors.Is(err, sql.ErrNoRows) {
		return errNoTokenSeq
	}
	if err != nil {
		return err
	}
	var wrong []string
	if cache != 1 {
		wrong = append(wrong, fmt.Sprintf("CACHE %d (each connection draws from its own block of values)", cache))
	}
	if cycle {
		wrong = append(wrong, "CYCLE (values wrap back to MINVALUE)")
	}
	if incr <= 0 {
		wrong = append(wrong, fmt.Sprintf("INCREMENT BY %d (values do not grow)", incr))
	}
	if len(wrong) == 0 {
		return nil
	}
	e := b.schemaError("", nil)
	e.Unsafe = fmt.Sprintf("token sequence %s has %s, so a later grant can get a smaller token than an earlier one; "+
		"run ALTER SEQUENCE %s CACHE 1 NO CYCLE INCREMENT BY 1, restart every client of the table (a connection keeps the values it cached), "+
		"then raise the floor (Backend.RaiseFloor) above the highest token granted so far",
		seq.String(), strings.Join(wrong, ", "), seq.quoted(Postgres))
	return e
}

// tokenSeqChecked runs checkTokenSeq until it succeeds once for the backend: the first
// grant of a backend (and its first floor operation) refuses an out-of-order token
// sequence. A sequence altered after that is found by CheckTable, or by the next
// process's first grant. It returns a *SchemaError as is and wraps any other error
// with unavailable(op, key). A missing sequence is left to the statements that use it
// (they report the missing object, or the missing lease table, as a *SchemaError).
func (b *Backend) tokenSeqChecked(ctx context.Context, op, key string) error {
	if b.dialect != Postgres || b.seqChecked.Load() {
		return nil
	}
	err := b.checkTokenSeq(ctx)
	var se *SchemaError
	switch {
	case err == nil:
		b.seqChecked.Store(true)
		return nil
	case errors.Is(err, errNoTokenSeq):
		return nil
	case errors.As(err, &se):
		return err
	}
	return unavailable(op, key, err)
}
