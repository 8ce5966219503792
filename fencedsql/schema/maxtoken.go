package schema

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// MaxToken returns the highest token db's database has accepted: the largest token
// column value in each of tables (names as fenced_tables gives them, with
// GuardSpec.TokenColumn when not the default), and the floor − 1 when that is higher
// (the highest of the floors the installed guards read, TokenFloors; none when no guard
// reads one), and the highest token a tombstone keeps (dialect.TombstoneLister: a key
// deleted under the highest token leaves it nowhere else). For a table named with a
// schema (database) qualifier outside the connection's scope (dialect.SchemaTokenLister:
// MySQL/MariaDB, a table of another database), it also reads that schema's floor and
// tombstones, which that table's guards hold to. With no tables it reads every table the
// database records as guarded (the registries, RegisterTables — every row of every
// registry — and the tables carrying the guard's triggers, by their schema and exact
// name). Raise a new lock service's floor to at least this value before the
// application uses it. It reads every row of every table (no index on the token
// column): run it at a switch, not in a loop.
//
// Each table is read by its exact identity, never through the caller's name
// resolution (red-team rt40c F1): where a name reaches tables of other schemas
// (dialect.TokenTableResolver, PostgreSQL: an unqualified name names a table of each
// schema, and a guard matches its name in every schema) every table of that name — as
// written or case-folded — that has the token column is read, each by its quoted,
// qualified catalog name; a name that reaches no such table fails. Reading too many
// only raises the answer.
//
// All reads run in one read-only REPEATABLE READ transaction on one connection, so the
// rows, the tombstones and the floors are one snapshot (a DELETE moving a token from a
// row to a tombstone between two reads cannot hide it). It refuses a server that is not
// a writable primary (dialect.PrimaryChecker and dialect.ReplicationLister, as
// RaiseTokenFloor; red-team rt40c F3, rt48i F2: a MySQL/MariaDB replica whose
// replication is stopped included, rt50c F2: a PostgreSQL logical-replication
// subscriber too) with ErrNotPrimary: a standby or replica answers
// from a copy that may lag; an account that may not list MySQL/MariaDB replication
// connections fails with ErrServerRoleUnknown (MariaDB: SLAVE MONITOR or SUPER; MySQL:
// REPLICATION CLIENT). Where
// row-level security could hide rows (dialect.UnfilteredReader, PostgreSQL) it turns
// row security off for its transaction, so a read a policy would filter fails with a
// *MaxTokenRowSecurityError instead of answering too low (red-team rt40c F2): run it as
// the tables' owner, a superuser or a role with BYPASSRLS. Where a session setting can
// make its reads see the tables as they were earlier (dialect.PastReader, MariaDB's
// system_versioning_asof on a system-versioned table) it refuses such a session with
// a *MaxTokenSessionError instead of answering the highest token of then (red-team
// rt50b F4).
func MaxToken(ctx context.Context, db *sql.DB, d dialect.Dialect, tables ...GuardSpec) (uint64, error) {
	return maxTokenOf(ctx, db, d, tables, false)
}

// maxTokenOf is MaxToken, or with readOnlyOK MaxTokenReadOnly.
func maxTokenOf(ctx context.Context, db *sql.DB, d dialect.Dialect, tables []GuardSpec, readOnlyOK bool) (uint64, error) {
	if err := complete("MaxToken", d); err != nil {
		return 0, err
	}
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return 0, fmt.Errorf("fencedsql: MaxToken: starting its read-only transaction: %w", err)
	}
	defer tx.Rollback()
	m, err := maxToken(ctx, tx, d, tables, readOnlyOK)
	if err != nil {
		if u, ok := d.(dialect.UnfilteredReader); ok && u.RowFiltered(err) {
			return 0, &MaxTokenRowSecurityError{Err: err}
		}
		return 0, err
	}
	return m, nil
}

// maxToken is MaxToken inside its transaction.
func maxToken(ctx context.Context, tx *sql.Tx, d dialect.Dialect, tables []GuardSpec, readOnlyOK bool) (uint64, error) {
	if err := recordsSession(ctx, tx, d, "MaxToken"); err != nil {
		return 0, err
	}
	if u, ok := d.(dialect.UnfilteredReader); ok {
		for _, q := range u.UnfilteredReadStatements() {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return 0, fmt.Errorf("fencedsql: MaxToken: %s: %w", q, err)
			}
		}
	}
	if err := requireCurrentReads(ctx, tx, d); err != nil {
		return 0, err
	}
	if err := requirePrimary(ctx, tx, d, "MaxToken", "a standby or replica answers from a copy that may lag behind tokens the primary accepted; run it on the primary", readOnlyOK); err != nil {
		return 0, err
	}
	specs := tables
	if len(specs) == 0 {
		recs, err := recordedTables(ctx, catalogQuery(tx), d)
		if err != nil {
			return 0, fmt.Errorf("fencedsql: MaxToken: reading the registry of guarded tables (name the tables instead): %w", err)
		}
		if len(recs) == 0 {
			return 0, configErr("MaxToken: the database records no guarded table (no registry, no guard installed): name the tables")
		}
		specs = make([]GuardSpec, 0, len(recs))
		for _, r := range recs {
			if r.TriggerOnly {
				if err := defaultColumnsGuard(ctx, tx, d, r); err != nil {
					return 0, err
				}
			}
			specs = append(specs, r.Spec)
		}
	}
	targets, err := tokenTargets(ctx, tx, d, specs)
	if err != nil {
		return 0, err
	}
	var max uint64
	// The rows first, then the tombstones, then the floors (one snapshot all the same).
	for _, t := range targets {
		var v sql.NullInt64
		q := "SELECT MAX(" + d.QuoteIdent(t.column) + ") FROM " + t.table.Quote(d.QuoteIdent)
		if err := tx.QueryRowContext(ctx, q).Scan(&v); err != nil {
			return 0, fmt.Errorf("fencedsql: MaxToken %s: %w", t.table, err)
		}
		if v.Valid && v.Int64 > 0 && uint64(v.Int64) > max {
			max = uint64(v.Int64)
		}
	}
	l, _ := d.(dialect.TombstoneLister)
	var query string
	if l != nil {
		query = l.TombstoneTablesQuery()
	}
	tombs, err := tombstoneMax(ctx, tx, d, query, nil)
	if err != nil {
		return 0, err
	}
	other, err := otherSchemasMax(ctx, tx, d, targets)
	if err != nil {
		return 0, err
	}
	floor, noGuard, err := floorMax(ctx, tx, d)
	if err != nil {
		return 0, err
	}
	hidden, err := hiddenGuardsMax(ctx, tx, d, targets, len(tables) == 0 && noGuard)
	if err != nil {
		return 0, err
	}
	for _, v := range []uint64{tombs, other, floor, hidden} {
		if v > max {
			max = v
		}
	}
	return max, nil
}

// floorMax is the highest floor − 1 of the floor tables the installed guards read
// (0 with none, or no guard reading one; noGuard: the listing found no guard that
// reads one). It reads them under a savepoint: a floor table a guard names but that
// is missing is skipped, and must not abort the transaction (PostgreSQL) that
// MaxToken's other reads share.
func floorMax(ctx context.Context, tx *sql.Tx, d dialect.Dialect) (top uint64, noGuard bool, err error) {
	if _, ok := d.(dialect.FloorFinder); !ok {
		return 0, false, nil
	}
	const sp = "fencedsql_maxtoken_floors"
	if _, err := tx.ExecContext(ctx, "SAVEPOINT "+sp); err != nil {
		return 0, false, fmt.Errorf("fencedsql: MaxToken: %w", err)
	}
	floors, err := tokenFloors(ctx, tx, d)
	if err != nil {
		if !isMissingTable(d, err) && !errors.Is(err, ErrNoFloorGuard) {
			return 0, false, err
		}
		noGuard = errors.Is(err, ErrNoFloorGuard)
		if _, rerr := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT "+sp); rerr != nil {
			return 0, false, fmt.Errorf("fencedsql: MaxToken: %w", rerr)
		}
	}
	for _, f := range floors {
		if f.Floor > 0 && f.Floor-1 > top {
			top = f.Floor - 1
		}
	}
	return top, noGuard, nil
}

// otherSchemasMax is, for a dialect.SchemaTokenLister, the highest token the floor
// (its value − 1) and the tombstone tables of each schema a table of tables is
// qualified with hold (red-team rt31b F4): a MySQL/MariaDB table named
// database-qualified through a connection to another database keeps its tombstones
// and reads its floor in its own database, which the connection's listings do not
// cover. A schema without a floor table adds nothing; reading the connection's own
// database again changes nothing. 0 for other dialects.
func otherSchemasMax(ctx context.Context, db querier, d dialect.Dialect, tables []tokenTarget) (uint64, error) {
	sl, ok := d.(dialect.SchemaTokenLister)
	if !ok {
		return 0, nil
	}
	seen := map[string]bool{}
	var top uint64
	for _, tt := range tables {
		t := tt.table
		if t.Schema == "" || seen[t.Schema] {
			continue
		}
		seen[t.Schema] = true
		f, _, err := readFloor(ctx, db, d, dialect.CatalogName(t.Schema, dialect.FloorTable))
		switch {
		case err == nil:
			if f > 0 {
				top = max(top, f-1)
			}
		case denied(d, err):
			return 0, &MaxTokenPrivilegeError{Object: dialect.TableName{Schema: t.Schema, Name: dialect.FloorTable}.String(), Privilege: "SELECT", Err: err}
		case !isMissingTable(d, err):
			return 0, fmt.Errorf("fencedsql: MaxToken: %w", err)
		}
		q, args := sl.TombstoneTablesInQuery(t.Schema)
		tombs, err := tombstoneMax(ctx, db, d, q, args)
		if err != nil {
			return 0, err
		}
		top = max(top, tombs)
	}
	return top, nil
}

// tombstoneMax is the highest token in the tombstone tables that query (with args)
// lists, one row each (schema, or "" for the connection's own, table name): 0 when
// query is "" (the dialect cannot list them) or there are none.
func tombstoneMax(ctx context.Context, db querier, d dialect.Dialect, query string, args []any) (uint64, error) {
	if query == "" {
		return 0, nil
	}
	rows, err := catalogQuery(db)(ctx, query, args...)
	if err != nil {
		return 0, fmt.Errorf("fencedsql: MaxToken: listing the tombstone tables: %w", err)
	}
	var max uint64
	for _, r := range rows {
		if len(r) != 2 {
			continue
		}
		t := dialect.CatalogName(r[0], r[1])
		var v sql.NullInt64
		if err := db.QueryRowContext(ctx, "SELECT MAX(fence_token) FROM "+t.Quote(d.QuoteIdent)).Scan(&v); err != nil {
			return 0, fmt.Errorf("fencedsql: MaxToken: tombstones %s: %w", t.String(), err)
		}
		if v.Valid && v.Int64 > 0 && uint64(v.Int64) > max {
			max = uint64(v.Int64)
		}
	}
	return max, nil
}
