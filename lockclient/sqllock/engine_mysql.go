package sqllock

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
)

// checkEngines reads the storage engine of the MySQL/MariaDB lease table, token counter
// table and waiter table, and the type of the lease table's token column and of the
// counter's v (narrowTokenColumns): nil when each table that exists uses InnoDB and both
// columns are BIGINT, a *SchemaError (Unsafe) naming the others and the ALTER TABLE
// that fixes them, errNoTokenSeq when the counter
// table does not exist (the statements that use it report that), or the database's
// error. The grant procedure needs a transactional, crash-safe engine: it increments the
// counter and writes the key's row in one transaction under InnoDB row locks, and a
// MEMORY table is emptied at every server restart (a replica starts it empty), after
// which the counter starts again from nothing and every holder is forgotten. The same
// statement reads innodb_flush_log_at_trx_commit (warnFlushLog).
func (b *Backend) checkEngines(ctx context.Context, compare bool) error {
	tables := []tableName{b.table, b.table.with("_token"), b.table.waiters()}
	q := "SELECT table_name, COALESCE(engine, ''), @@global.innodb_flush_log_at_trx_commit FROM information_schema.tables " +
		"WHERE table_schema = COALESCE(NULLIF(?, ''), DATABASE()) AND table_name IN (?, ?, ?)"
	args := []any{b.table.schema, tables[0].name, tables[1].name, tables[2].name}
	if h := statementHook.Load(); h != nil {
		(*h)(q, args)
	}
	rows, err := b.db.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	engines := map[string]string{}
	var flush string
	for rows.Next() {
		var name, engine string
		if err := rows.Scan(&name, &engine, &flush); err != nil {
			rows.Close()
			return err
		}
		engines[strings.ToLower(name)] = engine
	}
	if err := rows.Close(); err != nil {
		return err
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if _, ok := engines[strings.ToLower(tables[1].name)]; !ok {
		return errNoTokenSeq
	}
	warnFlushLog(b.logger, flush)
	var problems []string
	for _, t := range tables {
		engine, ok := engines[strings.ToLower(t.name)]
		if !ok || strings.EqualFold(engine, "InnoDB") {
			continue
		}
		problems = append(problems, fmt.Sprintf("table %s uses ENGINE=%s, not InnoDB: the grants need its transactions and row locks, "+
			"and a table that is not crash-safe (MEMORY is emptied at every restart) loses the token counter and the holders, "+
			"so tokens start again below those already granted; run ALTER TABLE %s ENGINE=InnoDB", t.String(), engine, t.quoted(MySQL)))
	}
	if len(problems) > 0 {
		problems[len(problems)-1] += ", then raise the floor (Backend.RaiseFloor) above the highest token granted so far"
	}
	if _, ok := engines[strings.ToLower(tables[0].name)]; ok {
		p, err := b.narrowTokenColumns(ctx)
		if err != nil {
			return err
		}
		problems = append(problems, p...)
	}
	if len(problems) == 0 {
		if _, ok := engines[strings.ToLower(tables[0].name)]; !ok || !compare {
			return nil
		}
		p, err := b.counterBehindTable(ctx)
		if err != nil || p == "" {
			return err
		}
		e := b.schemaError("", nil)
		e.Unsafe = p
		return e
	}
	e := b.schemaError("", nil)
	e.Unsafe = strings.Join(problems, "; ")
	return e
}

// narrowTokenColumns returns the problems of the MySQL lease table's token column and
// the counter's v (narrowColumn), read from the result metadata of a statement that
// reads no row (LIMIT 0: no catalog scan, which information_schema.COLUMNS can cost on a
// busy server). A column that does not exist is left to the statements that use it.
func (b *Backend) narrowTokenColumns(ctx context.Context) ([]string, error) {
	q := myAsOfNow + "SELECT l.token, c.v FROM " + b.table.quoted(MySQL) + " l CROSS JOIN " + b.table.with("_token").quoted(MySQL) + " c LIMIT 0"
	if h := statementHook.Load(); h != nil {
		(*h)(q, nil)
	}
	rows, err := b.db.QueryContext(ctx, q)
	if err != nil {
		if missingObject(err) || isMySQLErr(err, 1054) { // no such table, no such column
			return nil, nil
		}
		return nil, err
	}
	defer rows.Close()
	types, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	var problems []string
	for i, t := range []tableName{b.table, b.table.with("_token")} {
		if i >= len(types) {
			break
		}
		// go-sql-driver/mysql: "BIGINT" ("UNSIGNED BIGINT" unsigned), "INT", "SMALLINT", …
		typ := types[i].DatabaseTypeName()
		if strings.HasSuffix(typ, "BIGINT") {
			typ = "bigint"
		}
		if p := b.narrowColumn(t, types[i].Name(), strings.ToLower(typ)); p != "" {
			problems = append(problems, p)
		}
	}
	return problems, rows.Err()
}

// counterBehindTable compares the MySQL token counter with the tokens the lease table
// records (red-team rt28b F1, F6): a counter set back (UPDATE … SET v = 0, a restore of
// the counter table older than the lease table) would grant tokens at or below tokens
// already granted, and a negative one tokens that are no tokens. It returns the problem,
// or "" (also when the counter row is missing: the grants report that); a retired
// counter (Retire: row 1 at the largest BIGINT, row 2 the last token) is an error
// wrapping lockclient.ErrRetired. One statement,
// one snapshot: the grant procedure writes the counter and the lease row in one
// transaction.
func (b *Backend) counterBehindTable(ctx context.Context) (string, error) {
	c := b.table.with("_token")
	q := myAsOfNow + "SELECT (SELECT v FROM " + c.quoted(MySQL) + " WHERE id = 1), (SELECT MAX(token) FROM " + b.table.quoted(MySQL) + "), " +
		"(SELECT v FROM " + c.quoted(MySQL) + " WHERE id = " + strconv.Itoa(retiredRow) + ")"
	if h := statementHook.Load(); h != nil {
		(*h)(q, nil)
	}
	var v, top, retired sql.NullInt64
	if err := b.db.QueryRowContext(ctx, q).Scan(&v, &top, &retired); err != nil {
		if missingObject(err) {
			return "", nil
		}
		return "", err
	}
	if retired.Valid && v.Valid && v.Int64 == math.MaxInt64 {
		return "", b.retiredError("check", retired.Int64)
	}
	if !v.Valid || v.Int64 == math.MaxInt64 {
		return "", nil
	}
	return tokenSourceBehind(b, c, v.Int64+1, top), nil
}

// warnFlushLog warns, through the backend's logger, when the MySQL/MariaDB server does
// not flush its redo log at every commit (innodb_flush_log_at_trx_commit other than
// 1): a crash of the server (0) or of its machine (2) then forgets the grants of the
// last second or so, and the counter grants their tokens again to other holders — two
// leases with one token. The setting is global, with no per-transaction override (the
// PostgreSQL grant sets synchronous_commit itself), and servers run for tests or bulk
// loads set it on purpose, so it is a warning, not a refusal; the first check of each
// Backend gives it.
func warnFlushLog(l *slog.Logger, flush string) {
	if flush == "" || flush == "1" {
		return
	}
	l.Warn("sqllock: the lock server runs with innodb_flush_log_at_trx_commit = " + flush +
		": a crash can forget the grants of the last second and grant their tokens again; set it to 1 (SET GLOBAL and the server's configuration)")
}
