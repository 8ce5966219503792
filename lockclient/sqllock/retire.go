package sqllock

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"

	"github.com/fencedsql/fencedsql/lockclient"
)

// Retirement (lockclient.Retirer): the last step of moving an application from this
// lease table to another lock service. The mark is kept in the token source itself,
// where every grant draws its token, so a grant checks it in its own round trip and a
// process of an earlier release, which knows nothing of retirement, is refused too:
//
//   - PostgreSQL: the token sequence's MAXVALUE is lowered to its last value and the
//     sequence carries the COMMENT retiredMark. nextval fails (2200H) for every grant;
//     the comment tells this release that the end is a retirement, not exhaustion.
//     The last token stays the sequence's last value.
//   - MySQL/MariaDB: the last token is copied to the counter table's row id = 2
//     (retiredRow) and row 1 is set to the largest BIGINT, so every grant procedure's
//     increment fails (1690); a CreateTable of any release keeps both rows (INSERT
//     IGNORE).
//
// Neither is undone by the backend. An operator who lowers the MySQL counter or raises
// the PostgreSQL MAXVALUE (the fix an earlier release suggests for an exhausted
// sequence) brings the service back; do not.

var _ lockclient.Retirer = (*Backend)(nil)

// retiredMark is the COMMENT of a retired PostgreSQL token sequence.
const retiredMark = "fencedsql sqllock: retired"

// retiredRow is the id of the MySQL counter table's row that holds a retired
// service's last token.
const retiredRow = 2

// Retire implements lockclient.Retirer. It takes the lock grants take (PostgreSQL: the
// table's advisory lock; MySQL: the counter row), so every grant is ordered with it:
// one that drew its token before is at most the answer, every later one fails with an
// error wrapping lockclient.ErrRetired. It reads the source as LastToken does — a
// standby or replica is an error wrapping lockclient.ErrUnavailable; a source behind
// the lease table's tokens is a *SchemaError — and a second Retire answers the same
// last token. A source that never issued a token is first advanced (PostgreSQL: to 2,
// as its MAXVALUE must stay above MINVALUE 1; MySQL: to 1); those values are never
// granted. Retiring needs the right to alter the token source (PostgreSQL: the
// sequence's owner; MySQL: UPDATE and INSERT on the counter table).
func (b *Backend) Retire(ctx context.Context) (uint64, error) {
	const op = "retire"
	if err := b.tokenSourceChecked(ctx, op, "", false); err != nil && !errors.Is(err, lockclient.ErrRetired) {
		return 0, err
	}
	var last int64
	var err error
	if b.dialect == MySQL {
		err = b.inCounterLock(ctx, op, func(tx *sql.Tx) error {
			v, top, err := b.counterOnPrimary(ctx, tx, op)
			if err != nil {
				return err
			}
			if l, ok, err := b.retiredLast(ctx, tx); err != nil || ok {
				last = l
				return err
			}
			if v == math.MaxInt64 {
				return b.exhaustedCounter(nil)
			}
			if p := tokenSourceBehind(b, b.tokenSource(), v+1, top); p != "" {
				e := b.schemaError("", nil)
				e.Unsafe = p
				return e
			}
			if v < 1 {
				v = 1 // never issued: 1 is the last token now, and is never granted
			}
			if _, err := tx.ExecContext(ctx, "INSERT INTO "+b.tokenSource().quoted(MySQL)+" (id, v) VALUES (?, ?)", retiredRow, v); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, "UPDATE "+b.tokenSource().quoted(MySQL)+" SET v = ? WHERE id = 1", int64(math.MaxInt64)); err != nil {
				return err
			}
			last = v
			return nil
		})
	} else {
		err = b.inGrantLock(ctx, op, func(tx *sql.Tx) error {
			var top sql.NullInt64
			var standby bool
			if err := tx.QueryRowContext(ctx, b.q.lastToken).Scan(&last, &top, &standby); err != nil {
				return err
			}
			if standby {
				return replicaError(op, nil)
			}
			if l, ok, err := b.retiredLast(ctx, tx); err != nil || ok {
				last = l
				return err
			}
			if p := tokenSourceBehind(b, b.tokenSource(), last+1, top); p != "" {
				e := b.schemaError("", nil)
				e.Unsafe = p
				return e
			}
			// The value never leaves the server: DDL takes no bind parameters.
			seq := b.tokenSource()
			lit := pgLiteral(seq.quoted(Postgres))
			do := `DO $fencedsql$
DECLARE
    fencedsql_last bigint;
    fencedsql_called boolean;
BEGIN
    SELECT last_value, is_called INTO fencedsql_last, fencedsql_called FROM ` + seq.quoted(Postgres) + `;
    IF NOT fencedsql_called THEN
        fencedsql_last := pg_catalog.nextval(` + lit + `::regclass);
    END IF;
    IF fencedsql_last < 2 THEN -- MAXVALUE must be above MINVALUE 1
        fencedsql_last := pg_catalog.nextval(` + lit + `::regclass);
    END IF;
    EXECUTE pg_catalog.format('ALTER SEQUENCE %s MAXVALUE %s', ` + lit + `::regclass, fencedsql_last);
    EXECUTE pg_catalog.format('COMMENT ON SEQUENCE %s IS %L', ` + lit + `::regclass, ` + pgLiteral(retiredMark) + `);
END
$fencedsql$`
			if _, err := tx.ExecContext(ctx, do); err != nil {
				if pgStateIn(err, "42501") {
					return fmt.Errorf("sqllock: %s: only the owner of token sequence %s may retire it: %w", op, seq.String(), err)
				}
				return err
			}
			l, ok, err := b.retiredLast(ctx, tx)
			if err == nil && !ok {
				err = errors.New("the token sequence was not marked retired")
			}
			last = int64(l)
			return err
		})
	}
	if err != nil {
		return 0, err
	}
	return uint64(last), nil
}

// retiredLast reads whether the token source is retired and, if it is, its last token,
// through q (the backend's pool, or a transaction holding the grants' lock).
func (b *Backend) retiredLast(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (int64, bool, error) {
	var last int64
	var err error
	if b.dialect == MySQL {
		err = q.QueryRowContext(ctx, myAsOfNow+"SELECT v FROM "+b.tokenSource().quoted(MySQL)+" WHERE id = ?", retiredRow).Scan(&last)
	} else {
		err = q.QueryRowContext(ctx, `SELECT s.seqmax FROM pg_catalog.pg_sequence s `+
			`WHERE s.seqrelid = to_regclass($1::text) AND pg_catalog.obj_description(s.seqrelid, 'pg_class') = $2`,
			b.tokenSource().quoted(Postgres), retiredMark).Scan(&last)
	}
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, false, nil
	case err != nil:
		return 0, false, err
	}
	return last, true, nil
}

// retiredError is the error of an operation on a retired token source whose last token
// was last.
func (b *Backend) retiredError(op string, last int64) error {
	return fmt.Errorf("sqllock: %s: token source %s (last token %d): %w", op, b.tokenSource().String(), last, lockclient.ErrRetired)
}
