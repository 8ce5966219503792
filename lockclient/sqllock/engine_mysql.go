package sqllock

import (
	"context"
	"fmt"
	"strings"
)

// checkEngines reads the storage engine of the MySQL/MariaDB lease table, token counter
// table and waiter table: nil when each that exists uses InnoDB, a *SchemaError (Unsafe)
// naming the others and the ALTER TABLE that fixes them, errNoTokenSeq when the counter
// table does not exist (the statements that use it report that), or the database's
// error. The grant procedure needs a transactional, crash-safe engine: it increments the
// counter and writes the key's row in one transaction under InnoDB row locks, and a
// MEMORY table is emptied at every server restart (a replica starts it empty), after
// which the counter starts again from nothing and every holder is forgotten.
func (b *Backend) checkEngines(ctx context.Context) error {
	tables := []tableName{b.table, b.table.with("_token"), b.table.waiters()}
	q := "SELECT table_name, COALESCE(engine, '') FROM information_schema.tables " +
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
	for rows.Next() {
		var name, engine string
		if err := rows.Scan(&name, &engine); err != nil {
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
	if len(problems) == 0 {
		return nil
	}
	problems[len(problems)-1] += ", then raise the floor (Backend.RaiseFloor) above the highest token granted so far"
	e := b.schemaError("", nil)
	e.Unsafe = strings.Join(problems, "; ")
	return e
}
