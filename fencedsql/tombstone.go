package fencedsql

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Tombstones: G9 in docs/design.md, no resurrection.
//
// Per-row fencing (docs/design.md, G1) judges a write by the token stored on the row it changes; a
// row that was deleted is gone, and so is its token: a stale holder (token 10) whose
// INSERT arrives after a newer holder (token 20) deleted the row would bring the row
// back. So the database remembers deletions. A dialect that implements Tombstoner
// installs, per guarded table:
//
//   - one tombstone table per schema (per database on MySQL), TombstoneTable:
//     (table_name, pk, fence_token, deleted_at), primary key (table_name, pk), where pk
//     is the deleted row's primary key rendered as a JSON array (composite keys
//     work);
//   - an AFTER DELETE row trigger that upserts the tombstone of the deleted row with
//     its fence token, keeping the greater token. The wrapper's DELETE first runs a
//     fencing UPDATE that stamps the deleter's token on the rows, so that token is the
//     deleter's; a DELETE outside the wrapper records the token of the row's last
//     writer;
//   - a BEFORE INSERT row trigger that refuses a row whose key has a tombstone with a
//     greater token than the row's. An equal token (the deleter re-inserting) and a
//     newer one pass, as equal tokens pass elsewhere (strict mode is a property of the
//     wrapper's statements; the trigger cannot see it). The refusal is the NOT NULL
//     violation on the token column that the wrapper already maps to ErrFenced
//     (PostgreSQL 23502 naming the column, MySQL 1048, SQLite a RAISE message its
//     dialect classifies as such), so an INSERT or upsert through the wrapper fails
//     with ErrFenced, and a writer outside the wrapper is refused as well. BEFORE
//     INSERT triggers fire for upserts too (INSERT … ON CONFLICT, INSERT … ON
//     DUPLICATE KEY UPDATE) before the conflict is looked at, so an upsert under an
//     older token is refused even when the newer holder has re-inserted the row (the
//     per-row fencing would refuse it there anyway).
//
// Tombstones are kept until purged: PurgeTombstones (fencedsql-schema
// -purge-tombstones) deletes those older than a retention. The trade-off: a holder
// paused for longer than the retention (and whose lease therefore expired long ago)
// could resurrect a row whose tombstone was purged. Choose a retention well above the
// longest pause you want to survive (lease TTL plus GC pauses, VM migrations, network
// partitions); tombstones are small (one row per deleted key).
//
// Soft deletes (GORM's DeletedAt, bun's soft_delete) need no tombstone: the row stays,
// and "deleting" it is a fenced UPDATE, so its token keeps fencing older holders,
// including their attempts to undelete or re-create it.
//
// The lazy check before the first guarded write does not require the tombstone guard
// (nor the database-side guard): fenced writes are correct without it, only
// resurrection by a stale INSERT is not refused. CheckSchema reports it missing,
// and fencedsql-schema installs it.
//
// Limits: the table needs a primary key (a table without one is reported, and cannot
// be protected); the triggers compile in the primary key columns, so re-install them
// after changing the key; an UPDATE that changes a row's key to a deleted key is not
// refused; TRUNCATE (refused by the PostgreSQL guard) and MySQL's foreign-key cascades
// record no tombstones (CheckSchema reports such cascades). On PostgreSQL, inheritance
// children and partitions of a tombstoned table get its triggers too (CheckSchema's
// Fix), keyed under the parent's name.

// CheckTombstones is CheckSchema, which checks the tombstone guard (docs/design.md,
// G9) itself: for each existing table it reads the primary key
// (Tombstoner.PrimaryKeyQuery) and whether the tombstone triggers are installed
// (TombstoneInstalledQuery), and when they are not, reports the problem and appends
// Tombstoner.TombstoneDDL to the Fix, after the statements that add the columns and
// install the guard.
//
// Deprecated: use CheckSchema, which does the same.
func CheckTombstones(ctx context.Context, db *sql.DB, d Dialect, tables ...GuardSpec) ([]TableReport, error) {
	return CheckSchema(ctx, db, d, tables...)
}

// checkTombstone adds the tombstone guard's state to r (an existing table): its
// primary key, whether the triggers are installed, and the problem and fix when not.
// A table without a primary key is a problem with no fix.
func checkTombstone(ctx context.Context, db *sql.DB, d Dialect, spec GuardSpec, r *TableReport) error {
	if !r.Exists {
		return nil
	}
	if spec.TokenColumn == "" {
		spec.TokenColumn = DefaultTokenColumn
	}
	if spec.VersionColumn == "" {
		spec.VersionColumn = DefaultVersionColumn
	}
	table, problem := spec.parse()
	if problem != "" {
		return configErr("CheckSchema: table %q: %s", spec.Table, problem)
	}
	tokCol := spec.TokenColumn
	ts, ok := d.(Tombstoner)
	if !ok {
		r.Problems = append(r.Problems, "no tombstone guard available for this dialect: a stale holder can re-insert a row a newer one deleted")
		return nil
	}
	q, args := ts.PrimaryKeyQuery(table)
	rows, err := dbQueryStrings(db)(ctx, q, args)
	if err != nil {
		return fmt.Errorf("fencedsql: CheckSchema %s: the primary key query failed: %w", spec.Table, err)
	}
	r.PrimaryKey = nil
	for _, row := range rows {
		if len(row) > 0 && row[0] != "" {
			r.PrimaryKey = append(r.PrimaryKey, row[0])
		}
	}
	q, args = ts.TombstoneInstalledQuery(table)
	var installed sql.NullString
	switch err := db.QueryRowContext(ctx, q, args...).Scan(&installed); {
	case err == sql.ErrNoRows:
	case err != nil:
		return fmt.Errorf("fencedsql: CheckSchema %s: the tombstone query failed: %w", spec.Table, err)
	}
	r.Tombstoned = notNullFlag(installed.String)
	switch {
	case len(r.PrimaryKey) == 0:
		r.Problems = append(r.Problems, "no primary key: a deleted row cannot be protected against resurrection by a stale holder (tombstones need a key)")
	case !r.Tombstoned:
		r.Problems = append(r.Problems, "no tombstone guard installed: a stale holder can re-insert a row a newer one deleted")
		r.Fix = append(r.Fix, ts.TombstoneDDL(table, r.PrimaryKey, tokCol)...)
	}
	return nil
}

// PurgeTombstones deletes the tombstones recorded more than olderThan ago (by the
// database's clock) from the tombstone table of each schema (none: the connection's
// default schema or database) and returns how many it deleted. Run it through a plain
// or a fenced *sql.DB (the tombstone table is not a guarded table).
//
// Purging bounds the tombstone table, at a price: once a row's tombstone is purged, a
// holder paused for longer than olderThan could re-insert that row under its old
// token. See the package documentation on tombstones.
func PurgeTombstones(ctx context.Context, db *sql.DB, d Dialect, olderThan time.Duration, schemas ...string) (int64, error) {
	ts, ok := d.(Tombstoner)
	if !ok || d == nil {
		return 0, configErr("PurgeTombstones: the dialect keeps no tombstones")
	}
	if olderThan < 0 {
		return 0, configErr("PurgeTombstones: negative retention %v", olderThan)
	}
	if len(schemas) == 0 {
		schemas = []string{""}
	}
	var total int64
	for _, schema := range schemas {
		if schema != "" {
			if _, problem := parseTableName(schema + "." + TombstoneTable); problem != "" {
				return total, configErr("PurgeTombstones: schema %q: %s", schema, problem)
			}
		}
		q, args := ts.PurgeTombstonesQuery(schema, olderThan)
		res, err := db.ExecContext(ctx, q, args...)
		if err != nil {
			return total, fmt.Errorf("fencedsql: PurgeTombstones: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return total, fmt.Errorf("fencedsql: PurgeTombstones: %w", err)
		}
		total += n
	}
	return total, nil
}
