package sqllock

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
)

// The token source must hand out values in call order across every connection, and
// must not forget them at a crash restart or failover. On PostgreSQL the sequence needs
// CACHE 1 (a larger cache gives each connection its own block of values, so a later
// grant on another connection can draw a smaller one), NO CYCLE (no wrap back to
// MINVALUE), a positive INCREMENT and values left before MAXVALUE; it and the lease
// table must be permanent (logged): an UNLOGGED relation is reset to empty — an UNLOGGED
// sequence to its start value — by crash recovery and has no content on a standby, and
// a temporary one ends with its session. On MySQL/MariaDB the lease, counter and waiter
// tables must use InnoDB (transactional, crash-safe): a MEMORY table is emptied at every
// restart, so the counter would start again from nothing. DDL creates all of them so,
// but with IF NOT EXISTS, which keeps an object that already exists (a DBA's tuning, a
// restored dump, an ALTER since); the backend therefore reads them before trusting them.

// errNoTokenSeq: the PostgreSQL token sequence does not exist (the statements that use
// it report that themselves).
var errNoTokenSeq = errors.New("sqllock: the token sequence does not exist")

// tokenSeqMinLeft is how many values a PostgreSQL token sequence with a lowered MAXVALUE
// (AS integer, MAXVALUE n) must have left for checkTokenSeq to accept it: a sequence
// that close to its end would soon make every grant fail, and the fix (ALTER SEQUENCE …
// AS bigint NO MAXVALUE) is an operator's. It is also the number of tokens the highest
// floor leaves (maxFloor; RaiseFloor against a lowered MAXVALUE: floorLimit), so that a
// floor accepted by one process never makes the check of another refuse the source.
const tokenSeqMinLeft = 1_000_000

// checkTokenSeq reads the settings of the token source: nil when they keep tokens in
// grant order and across a crash restart or failover, a *SchemaError (Unsafe) saying
// what is wrong and how to fix it otherwise, errNoTokenSeq when the PostgreSQL sequence
// does not exist, or the database's error when it could not answer. PostgreSQL: the
// sequence's CACHE, CYCLE, INCREMENT, MAXVALUE against its last value, and the
// persistence of the sequence and of the lease table. MySQL: the engine of the lease,
// counter and waiter tables (the counter row itself is incremented under its row lock:
// no cache, no cycle). Both: the lease table's token column (and MySQL's counter
// column) must be BIGINT (narrowColumn).
func (b *Backend) checkTokenSeq(ctx context.Context) error { return b.checkTokenSource(ctx, true) }

// checkTokenSource is checkTokenSeq; without compare, the source is not compared with
// the lease table's tokens (RaiseFloor: raising the floor is that problem's fix).
func (b *Backend) checkTokenSource(ctx context.Context, compare bool) error {
	if b.dialect == MySQL {
		return b.checkEngines(ctx, compare)
	}
	seq := b.table.with("_token_seq")
	q := `SELECT s.seqcache, s.seqcycle, s.seqincrement, s.seqstart, s.seqmin, s.seqmax, pg_catalog.pg_sequence_last_value(s.seqrelid), ` +
		`c.relpersistence::text, COALESCE(t.relpersistence::text, ''), t.oid IS NOT NULL, ` +
		// A domain's base type (one level: a domain over bigint is as wide as bigint).
		`COALESCE((SELECT pg_catalog.format_type(COALESCE(NULLIF(ty.typbasetype, 0), a.atttypid), NULL) FROM pg_catalog.pg_attribute a ` +
		`JOIN pg_catalog.pg_type ty ON ty.oid = a.atttypid ` +
		`WHERE a.attrelid = t.oid AND a.attname = 'token' AND NOT a.attisdropped), '') , ` +
		`COALESCE(pg_catalog.obj_description(s.seqrelid, 'pg_class') = $3, false) ` +
		`FROM pg_catalog.pg_sequence s JOIN pg_catalog.pg_class c ON c.oid = s.seqrelid ` +
		`LEFT JOIN pg_catalog.pg_class t ON t.oid = to_regclass($2::text) ` +
		`WHERE s.seqrelid = to_regclass($1::text)`
	args := []any{seq.quoted(Postgres), b.table.quoted(Postgres), retiredMark}
	if h := statementHook.Load(); h != nil {
		(*h)(q, args)
	}
	var cache, incr, start, min, max int64
	var last sql.NullInt64
	var cycle, tableExists, retired bool
	var seqPersist, tablePersist, tokenType string
	err := b.db.QueryRowContext(ctx, q, args...).Scan(&cache, &cycle, &incr, &start, &min, &max, &last, &seqPersist, &tablePersist, &tableExists, &tokenType, &retired)
	if errors.Is(err, sql.ErrNoRows) {
		return errNoTokenSeq
	}
	if err != nil {
		return err
	}
	if retired { // its MAXVALUE is its last token: no problem of an exhausted sequence
		return b.retiredError("check", max)
	}
	var problems []string
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
	if min < 1 {
		wrong = append(wrong, fmt.Sprintf("MINVALUE %d (a token must be at least 1)", min))
	}
	if len(wrong) > 0 {
		problems = append(problems, fmt.Sprintf("token sequence %s has %s, so a later grant can get a smaller token than an earlier one; "+
			"run ALTER SEQUENCE %s CACHE 1 NO CYCLE INCREMENT BY 1 MINVALUE 1, restart every client of the table (a connection keeps the values it cached), "+
			"then raise the floor (Backend.RaiseFloor) above the highest token granted so far",
			seq.String(), strings.Join(wrong, ", "), seq.quoted(Postgres)))
	}
	// Near its end only for a lowered MAXVALUE: a sequence at the BIGINT end (a floor
	// raised up to maxFloor, then grants) grants what is left and then fails typed
	// (2200H), the same answer for every process (red-team rt28b F5).
	if incr > 0 && max < math.MaxInt64 && seqLeft(start, max, last, incr) < tokenSeqMinLeft {
		problems = append(problems, fmt.Sprintf("token sequence %s is at or near its MAXVALUE %d (fewer than %d values left), "+
			"after which every grant fails; run ALTER SEQUENCE %s AS bigint NO MAXVALUE",
			seq.String(), max, tokenSeqMinLeft, seq.quoted(Postgres)))
	}
	if p := b.narrowColumn(b.table, "token", tokenType); p != "" {
		problems = append(problems, p)
	}
	if compare && len(wrong) == 0 && tableExists {
		p, err := b.tokenSeqBehindTable(ctx, seq)
		if err != nil {
			return err
		}
		if p != "" {
			problems = append(problems, p)
		}
	}
	if p := persistenceProblem("token sequence", "SEQUENCE", seq, seqPersist,
		"the lock service would grant tokens below those already granted"); p != "" {
		problems = append(problems, p+", then raise the floor (Backend.RaiseFloor) above the highest token granted so far")
	}
	if p := persistenceProblem("lease table", "TABLE", b.table, tablePersist,
		"every holder would be forgotten and its keys granted again while it still writes"); p != "" {
		problems = append(problems, p)
	}
	if len(problems) == 0 {
		return nil
	}
	e := b.schemaError("", nil)
	e.Unsafe = strings.Join(problems, "; ")
	return e
}

// tokenSeqBehindTable compares the next value of the PostgreSQL token sequence seq with
// the tokens the lease table records (red-team rt28b F1, F6): a sequence reset
// (ALTER SEQUENCE … RESTART, a setval lower, a sequence restored from an older dump than
// the table) would grant tokens at or below tokens already granted, and one whose next
// value is below 1 would grant tokens that are no tokens. It returns the problem, or ""
// when the next value is at least 1 and above max(token). One statement: the table's
// rows are those of its snapshot, taken before the sequence is read, so a grant that
// commits meanwhile cannot make the sequence look behind.
func (b *Backend) tokenSeqBehindTable(ctx context.Context, seq tableName) (string, error) {
	q := `SELECT s.last_value, s.is_called, (SELECT max(l.token) FROM ` + b.table.quoted(Postgres) + ` l) FROM ` + seq.quoted(Postgres) + ` s`
	if h := statementHook.Load(); h != nil {
		(*h)(q, nil)
	}
	var last int64
	var called bool
	var top sql.NullInt64
	if err := b.db.QueryRowContext(ctx, q).Scan(&last, &called, &top); err != nil {
		if missingObject(err) { // dropped since the catalog query: left to the statements
			return "", nil
		}
		return "", err
	}
	next := last
	if called {
		if last == math.MaxInt64 {
			return "", nil // exhausted: the grants report it (2200H)
		}
		next = last + 1
	}
	return tokenSourceBehind(b, seq, next, top), nil
}

// tokenSourceBehind describes a token source whose next token is next, for a lease
// table whose highest recorded token is top: a problem when next is below 1 or not
// above top, "" otherwise.
func tokenSourceBehind(b *Backend, src tableName, next int64, top sql.NullInt64) string {
	switch {
	case next < 1:
		return fmt.Sprintf("token source %s would hand out %d next, and a token must be at least 1; "+
			"raise the floor (Backend.RaiseFloor) above the highest token granted so far", src.String(), next)
	case top.Valid && next <= top.Int64:
		return fmt.Sprintf("token source %s would hand out %d next, at or below token %d that the lease table %s records "+
			"(the source was reset or restored older than the table), so a grant could get a token below one already granted; "+
			"raise the floor (Backend.RaiseFloor) above %d, and above the highest token the guarded tables hold",
			src.String(), next, top.Int64, b.table.String(), top.Int64)
	}
	return ""
}

// narrowColumn describes column col of table t, whose type as the catalog spells it is
// typ, when it cannot hold every token the source can hand out (red-team rt31b F2): a
// token column narrower than BIGINT (an older hand-written schema, a restore through a
// tool that maps types) takes the first tokens and then fails every grant — after a
// raise above its range (a switch from a lock service with larger tokens) at once —
// with the database's out-of-range error. It returns "" for a BIGINT column or one
// that does not exist (the statements report a missing column). One check for both
// dialects: PostgreSQL's format_type spells it "bigint", MySQL's DATA_TYPE "bigint".
func (b *Backend) narrowColumn(t tableName, col, typ string) string {
	if typ == "" || strings.EqualFold(typ, "bigint") {
		return ""
	}
	alter := fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s TYPE bigint", t.quoted(Postgres), col)
	if b.dialect == MySQL {
		alter = fmt.Sprintf("ALTER TABLE %s MODIFY %s BIGINT NOT NULL", t.quoted(MySQL), col)
	}
	return fmt.Sprintf("column %s of %s is %s, narrower than the BIGINT tokens the source hands out, so a grant fails "+
		"once a token (or a raised floor) is beyond its range; run %s", col, t.String(), typ, alter)
}

// floorLimit is the highest floor RaiseFloor accepts for a token source whose largest
// value is max: it leaves tokenSeqMinLeft tokens, as checkTokenSeq demands.
func floorLimit(max int64) int64 { return max - tokenSeqMinLeft }

// seqLeft returns how many values a sequence with a positive increment can still hand
// out: from its last value (or before its start when none was drawn yet) to max.
func seqLeft(start, max int64, last sql.NullInt64, incr int64) uint64 {
	next := start
	if last.Valid {
		if last.Int64 > max-incr {
			return 0
		}
		next = last.Int64 + incr
	}
	if next > max {
		return 0
	}
	return (uint64(max)-uint64(next))/uint64(incr) + 1
}

// persistenceProblem describes a PostgreSQL relation whose relpersistence p is not
// permanent ('p'), with its fix, or returns "" when it is.
func persistenceProblem(what, kind string, name tableName, p, loss string) string {
	switch p {
	case "u":
		return fmt.Sprintf("%s %s is UNLOGGED: crash recovery resets it and a standby does not have its content, so after a crash restart or failover %s; "+
			"run ALTER %s %s SET LOGGED", what, name.String(), loss, kind, name.quoted(Postgres))
	case "t":
		return fmt.Sprintf("%s %s is temporary: it ends with its session and no other session sees it, so %s; "+
			"drop it and run sqllock.CreateTable", what, name.String(), loss)
	}
	return ""
}

// tokenSeqChecked runs checkTokenSeq until it succeeds once for the backend: the first
// grant of a backend (and, on PostgreSQL, its first floor operation) refuses a token
// source or lease table that is out of order, not durable or near its end. One altered
// after that is found by CheckTable, or by the next
// process's first grant. It returns a *SchemaError as is and wraps any other error
// with unavailable(op, key). A missing sequence is left to the statements that use it
// (they report the missing object, or the missing lease table, as a *SchemaError).
func (b *Backend) tokenSeqChecked(ctx context.Context, op, key string) error {
	return b.tokenSourceChecked(ctx, op, key, true)
}

// tokenSourceChecked is tokenSeqChecked; without compare (RaiseFloor) the source is not
// compared with the lease table's tokens, and a pass is not remembered.
func (b *Backend) tokenSourceChecked(ctx context.Context, op, key string, compare bool) error {
	if b.seqChecked.Load() {
		return nil
	}
	err := b.checkTokenSource(ctx, compare)
	var se *SchemaError
	switch {
	case err == nil:
		if compare {
			b.seqChecked.Store(true)
		}
		return nil
	case errors.Is(err, errNoTokenSeq):
		return nil
	case errors.As(err, &se), errors.Is(err, lockclient.ErrRetired):
		return err
	}
	return unavailable(op, key, err)
}

// tokenSourceError returns the error for err when it says that the token source cannot
// hand out a value or the lease table cannot store it: a value out of a column's range
// (PostgreSQL numeric_value_out_of_range, 22003; MySQL 1264: a token column narrowed
// after the check, narrowColumn); the source is at its end — PostgreSQL
// sequence_generator_limit_exceeded (SQLSTATE 2200H: nextval past the sequence's
// MAXVALUE), MySQL ER_DATA_OUT_OF_RANGE (1690: the grant procedure's increment of the
// BIGINT counter overflowed) — or, on MySQL, the counter row is missing (the grant
// procedures' SIGNAL, error 1644); nil otherwise. No retry passes then: only an
// operator's change of the token source does. The end of a source is a *SchemaError,
// or, when the source was retired (Retire: the end is the mark, read with one more
// statement on this failure path), an error wrapping lockclient.ErrRetired.
func (b *Backend) tokenSourceError(ctx context.Context, err error) error {
	switch {
	case err == nil:
		return nil
	case b.dialect == Postgres && pgStateIn(err, "22003"), b.dialect == MySQL && isMySQLErr(err, 1264):
		// A token beyond a column's range: a column narrowed after the token-source
		// check passed (rt31b F2).
		e := b.schemaError("", err)
		e.Unsafe = b.narrowColumn(b.table, "token", "too narrow for the token") + " (and any other column that holds tokens)"
		return e
	case b.dialect == MySQL && isMySQLErr(err, 1644) && strings.Contains(err.Error(), counterRowMissingSignal):
		return b.schemaError(b.counterRowMissing(), err)
	case b.dialect == Postgres && pgStateIn(err, "2200H"), b.dialect == MySQL && isMySQLErr(err, 1690):
	default:
		return nil
	}
	// The caller's context may have ended with the statement; the probe is short.
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), probeTimeout)
	defer cancel()
	if last, ok, perr := b.retiredLast(pctx, b.db); perr == nil && ok {
		return b.retiredError("grant", last)
	}
	if b.dialect == MySQL {
		return b.exhaustedCounter(err)
	}
	seq := b.table.with("_token_seq")
	e := b.schemaError("", err)
	e.Unsafe = fmt.Sprintf("token sequence %s reached its MAXVALUE, so every grant fails; run ALTER SEQUENCE %s AS bigint NO MAXVALUE",
		seq.String(), seq.quoted(Postgres))
	return e
}

// probeTimeout bounds the statement that tells a retired token source from an
// exhausted one after a grant failed.
const probeTimeout = 5 * time.Second

// exhaustedCounter is the *SchemaError of a MySQL token counter at the largest BIGINT.
func (b *Backend) exhaustedCounter(err error) *SchemaError {
	e := b.schemaError("", err)
	e.Unsafe = fmt.Sprintf("token counter %s reached the largest BIGINT, so every grant fails; the table needs a new token source "+
		"(a new lease table, with a floor above every token the guarded tables hold)", b.table.with("_token").String())
	return e
}

// counterRowMissingSignal is the message of the MySQL grant procedures' SIGNAL when the
// row of the token counter does not exist.
const counterRowMissingSignal = "the token counter row is missing"

// counterRowMissing is SchemaError.Missing for a MySQL token counter without its row.
func (b *Backend) counterRowMissing() string {
	return "the row of the token counter " + b.table.with("_token").String()
}

// grantFailed is the error of a grant statement that failed with err: a *SchemaError
// when the token source cannot hand out a value (tokenSourceError), otherwise
// unavailable(op, key, err).
func (b *Backend) grantFailed(ctx context.Context, op, key string, err error) error {
	if e := b.tokenSourceError(ctx, err); e != nil {
		return e
	}
	return unavailable(op, key, err)
}
