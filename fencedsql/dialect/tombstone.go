package dialect

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Tombstoner is implemented by dialects that can keep tombstones (G9 in
// docs/design.md, no resurrection). Each guarded table gets a tombstone table of its
// own, in its schema, whose key columns have the primary key's own types and
// collations, so that a tombstone matches a key exactly when the table's own key
// would: by the database's equality, never by a rendering that depends on session
// settings (time zone, output formats, float digits) or on case. Triggers record the
// primary key and fence token of every deleted row (and of the key a key-changing
// UPDATE leaves), and refuse an INSERT, upsert or key-changing UPDATE onto a key whose
// tombstone carries a newer token, with the NOT NULL violation on the token column
// that the wrapper reports as ErrFenced. The check runs after the database has waited
// for a concurrent DELETE of the same key to end, so a DELETE that commits while the
// INSERT waits is seen. See schema.Check and PurgeTombstones; the dialect packages
// document their DDL.
type Tombstoner interface {
	// PrimaryKeyQuery returns a query listing the primary key columns of table, one
	// row each in key order: (column name, column type as the dialect's DDL spells
	// it, collation or "" for none, the schema the table resolves to). No rows: no
	// primary key, or no such table.
	PrimaryKeyQuery(table TableName) (query string, args []any)
	// TombstoneDDL returns the statements that create table's tombstone table when it
	// is missing and install table's tombstone triggers, in order (re-running them
	// replaces the triggers). key is the primary key, in key order; table should carry
	// its schema (schema.Check resolves it; see TombstoneFix).
	TombstoneDDL(table TableName, key []KeyColumn, tokenCol string) []string
	// UntombstoneDDL returns the statements that remove table's tombstone triggers.
	// Where the tombstone table is the dialect's evidence that the table was
	// tombstoned (MySQL/MariaDB, SQLite: a tombstone table without the triggers is a
	// guard lost by a table swap, SideDoorGuardLost, which the lazy check refuses) it
	// drops the tombstone table too; PostgreSQL keeps it (its evidence is the
	// tombstone function, which this drops).
	UntombstoneDDL(table TableName) []string
	// TombstoneInstalledQuery returns a query yielding one row with 1 when the
	// current version of the tombstone triggers is installed on table, 0 or no row
	// otherwise.
	TombstoneInstalledQuery(table TableName) (query string, args []any)
	// PurgeTombstonesQuery returns the statement that deletes the tombstones of
	// table recorded more than olderThan ago by the database's clock.
	PurgeTombstonesQuery(table TableName, olderThan time.Duration) (query string, args []any)
}

// KeyColumn is one column of a guarded table's primary key, as Tombstoner's
// PrimaryKeyQuery reads it from the catalog.
type KeyColumn struct {
	Name      string // column name
	Type      string // type as the dialect's DDL spells it (e.g. "numeric(10,2)", "varchar(20)")
	Collation string // collation name, "" for none or the type's default
	// Equals is the key's equality operator, qualified, where the database's own
	// would not be the one the primary key's index uses (PostgreSQL: citext's = in
	// its extension's schema, which a function with a pinned search_path would not
	// find — text's case-sensitive = would be used through a cast); "" otherwise.
	Equals string
	// Rowid (SQLite) is set on every column of the key of a table that keeps a rowid
	// apart from its key (a rowid table whose key is not its INTEGER PRIMARY KEY): a
	// write may name the rowid, and collide on it, instead of the key.
	Rowid bool
}

// PrimaryKeyColumns reads table's primary key with ts.PrimaryKeyQuery through query
// and returns it in key order, with table's schema filled in from the catalog when
// table names none (the schema its name resolves to, exact as the catalog spells it:
// InCatalogSchema). No rows: no primary key.
func PrimaryKeyColumns(ctx context.Context, query CatalogQuery, ts Tombstoner, table TableName) (TableName, []KeyColumn, error) {
	q, args := ts.PrimaryKeyQuery(table)
	rows, err := query(ctx, q, args...)
	if err != nil {
		return table, nil, err
	}
	var key []KeyColumn
	for _, row := range rows {
		if len(row) < 4 || row[0] == "" {
			continue
		}
		kc := KeyColumn{Name: row[0], Type: row[1], Collation: row[2]}
		if len(row) > 4 {
			kc.Equals = row[4]
		}
		if len(row) > 5 {
			kc.Rowid = CatalogBool(row[5])
		}
		key = append(key, kc)
		if table.Schema == "" {
			table = table.InCatalogSchema(row[3])
		}
	}
	return table, key, nil
}

// KeyColumnsNamed turns key column names into key columns that carry only their names
// (enough for the statements that name the columns: a trigger's body, a WHEN clause).
func KeyColumnsNamed(names []string) []KeyColumn {
	key := make([]KeyColumn, len(names))
	for i, n := range names {
		key[i].Name = n
	}
	return key
}

// TombstoneTablePrefix starts the name of every tombstone table: a guarded table's
// tombstones live in "fencedsql_tomb_<table>" in its schema (shortened with a hash
// where the database limits identifier length). Like every object whose name starts
// with "fencedsql_", it belongs to the guards.
const TombstoneTablePrefix = "fencedsql_tomb_"

// TombstoneTable is the name of the single tombstone table of earlier versions, one
// per schema, keyed by the primary key rendered as JSON text. It is no longer written
// or read.
//
// Deprecated: tombstones are kept per table; see TombstoneTablePrefix.
const TombstoneTable = "fencedsql_tombstones"

// UniqueKeyFinder is implemented by a Tombstoner that can list a table's unique keys
// other than its primary key, so that schema.Check can say what tombstones do not
// cover: they key on the primary key only, so a row deleted under a newer token can
// come back under a new primary key (a surrogate: AUTO_INCREMENT, serial, rowid) with
// the same natural unique key, from a stale holder.
type UniqueKeyFinder interface {
	// UniqueKeysQuery returns a query listing the columns of table's unique keys
	// (constraints and unique indexes) other than the primary key, one row each:
	// (key name, column name, or an expression's text), in key and column order.
	UniqueKeysQuery(table TableName) (query string, args []any)
}

// UniqueIndex is one unique index of a table other than its primary key's, as a
// UniqueTombstoner reads it from the catalog.
type UniqueIndex struct {
	Name string // the index's name
	// Columns are the index's columns in index order: Name, and Collation the index
	// compares the column under ("" for the database's default). Name is "" for an
	// expression (which cannot be compared column by column).
	Columns []KeyColumn
	Partial bool // the index has a WHERE clause
}

// Expression reports whether one of the index's columns is an expression.
func (u UniqueIndex) Expression() bool {
	for _, c := range u.Columns {
		if c.Name == "" {
			return true
		}
	}
	return false
}

// UniqueTombstoner is implemented by a Tombstoner whose database deletes the row a
// write collides with on any unique index without that row's delete triggers (SQLite's
// REPLACE conflict resolution: INSERT OR REPLACE, REPLACE, UPDATE OR REPLACE, and a
// UNIQUE … ON CONFLICT REPLACE constraint), so its tombstone triggers must know the
// table's unique indexes to record the rows such a write displaces. Where a dialect
// implements it, schema.Check installs the tombstone guard with TombstoneUniqueDDL
// (TombstoneDDLFor), and its TombstoneInstalledQuery reports a guard installed before
// a unique index was created (or dropped) as not installed.
type UniqueTombstoner interface {
	// UniqueIndexesQuery returns a query listing the columns of table's unique indexes
	// other than the primary key's, one row each in index and column order: (index
	// name, column name or "" for an expression, collation the index compares it
	// under, whether the index is partial).
	UniqueIndexesQuery(table TableName) (query string, args []any)
	// TombstoneUniqueDDL is TombstoneDDL for a table whose unique indexes other than
	// the primary key's are unique (as UniqueIndexes reads them).
	TombstoneUniqueDDL(table TableName, key []KeyColumn, unique []UniqueIndex, tokenCol string) []string
}

// UniqueIndexes reads table's unique indexes other than the primary key's with
// u.UniqueIndexesQuery through query, in the query's order.
func UniqueIndexes(ctx context.Context, query CatalogQuery, u UniqueTombstoner, table TableName) ([]UniqueIndex, error) {
	q, args := u.UniqueIndexesQuery(table)
	rows, err := query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	var out []UniqueIndex
	for _, row := range rows {
		if len(row) < 4 || row[0] == "" {
			continue
		}
		if len(out) == 0 || out[len(out)-1].Name != row[0] {
			out = append(out, UniqueIndex{Name: row[0], Partial: CatalogBool(row[3])})
		}
		last := &out[len(out)-1]
		last.Columns = append(last.Columns, KeyColumn{Name: row[1], Collation: row[2]})
	}
	return out, nil
}

// TombstoneDDLFor returns the statements that install ts's tombstone guard on table
// (key: its primary key): TombstoneDDL, or, where ts is a UniqueTombstoner, its
// TombstoneUniqueDDL with table's unique indexes read through query; where ts is a
// TombstoneCarrier, as its TombstoneCarryDDL completes them (or refuses, with an
// error wrapping ErrTombstoneMoved).
func TombstoneDDLFor(ctx context.Context, query CatalogQuery, ts Tombstoner, table TableName, key []KeyColumn, tokenCol string) ([]string, error) {
	if err := TombstoneKeyNames(ts, key); err != nil {
		return nil, err
	}
	var ddl []string
	if u, ok := ts.(UniqueTombstoner); ok {
		unique, err := UniqueIndexes(ctx, query, u, table)
		if err != nil {
			return nil, err
		}
		ddl = u.TombstoneUniqueDDL(table, key, unique, tokenCol)
	} else {
		ddl = ts.TombstoneDDL(table, key, tokenCol)
	}
	if c, ok := ts.(TombstoneCarrier); ok {
		return c.TombstoneCarryDDL(ctx, query, table, key, tokenCol, ddl)
	}
	return ddl, nil
}

// TombstoneColumns are the tombstone table's own columns, after the key's, in every
// dialect: the token of the key's last delete, and when it was recorded (by the
// database's clock; PurgeTombstonesQuery reads it).
var TombstoneColumns = [...]string{"fence_token", "deleted_at"}

// ErrTombstoneKeyName is the refusal to install a table's tombstone guard when a column
// of its primary key has the name of one of the tombstone table's own columns
// (TombstoneColumns): the tombstone table, which holds the key's columns under their
// own names beside those, cannot be created (red-team rt37a F3: the Fix failed with
// the database's raw duplicate-column error, so neither guard of it was installed).
// schema.Check reports it as a problem without a tombstone Fix; the table is fenced
// as before, only a stale re-insert of a deleted key is not refused.
var ErrTombstoneKeyName = errors.New("fencedsql: a primary key column has the name of a tombstone table's own column")

// TombstoneKeyNames refuses, with an error wrapping ErrTombstoneKeyName, a key one of
// whose columns is named like a column of TombstoneColumns, compared as ts's database
// compares column names (SameColumnName; ignoring case where ts is not a Dialect).
func TombstoneKeyNames(ts Tombstoner, key []KeyColumn) error {
	same := func(a, b string) bool { return strings.EqualFold(a, b) }
	if d, ok := ts.(Dialect); ok {
		same = func(a, b string) bool { return SameColumnName(d, a, b) }
	}
	for _, k := range key {
		for _, c := range TombstoneColumns {
			if same(k.Name, c) {
				return fmt.Errorf("%w: the primary key column %s is named like the tombstone table's column %s, which holds the token (or time) of a key's last delete; "+
					"no tombstone guard can be installed, so a stale holder can re-insert a row a newer one deleted (the writes are fenced as before): rename the key column to install it",
					ErrTombstoneKeyName, k.Name, c)
			}
		}
	}
	return nil
}

// ErrTombstoneMoved is the refusal of a TombstoneCarrier to install a table's
// tombstone guard while another table (a renamed one) keeps tombstone triggers under
// this table's name and their tombstones cannot be kept for it (it has no primary key,
// or the renames chain too deep): installing would drop them (red-team rt31a F1, F2).
var ErrTombstoneMoved = errors.New("fencedsql: a tombstone trigger of this table's name sits on another table (renamed?)")

// TombstoneCarrier is implemented by a Tombstoner whose tombstone triggers are named
// after the table in a namespace wider than the table (MySQL/MariaDB: the database;
// SQLite: the schema), where a renamed table keeps its triggers, and their names, and
// they keep recording into the old name's tombstone table. TombstoneCarryDDL returns
// ddl (the statements TombstoneDDL or TombstoneUniqueDDL wrote for table, tokenCol its
// token column) completed so that no tombstone is lost:
//
//   - where a trigger of table's own tombstone names sits on another table (renamed
//     away: a rename, or a table swap's old table), first that table's own tombstone
//     guard (TombstoneMovedDDL), whose install carries its tombstones over and frees
//     the names, or a refusal wrapping ErrTombstoneMoved when it has none to install;
//   - then the statements that carry the tombstones of table's triggers of another
//     table's name into table's own tombstone table (keeping the greater token of a
//     key) and drop those triggers. The old name's tombstone table stays: a table
//     created under the old name (a swap's new table) shares it.
//
// It reads the catalog through query.
type TombstoneCarrier interface {
	TombstoneCarryDDL(ctx context.Context, query CatalogQuery, table TableName, key []KeyColumn, tokenCol string, ddl []string) ([]string, error)
}

type movedDepthKey struct{}

// maxMovedDepth bounds the chain of renamed tables TombstoneMovedDDL follows.
const maxMovedDepth = 4

// TombstoneMovedDDL returns the statements that install ts's tombstone guard on other,
// a table that keeps tombstone triggers of another table's name (TombstoneCarrier),
// with other's primary key read through query and tokenCol as its token column: its
// install (TombstoneDDLFor) carries those triggers' tombstones over to its own
// tombstone table. It refuses with an error wrapping ErrTombstoneMoved when other has
// no primary key or the chain of such tables is longer than a few.
func TombstoneMovedDDL(ctx context.Context, query CatalogQuery, ts Tombstoner, other TableName, tokenCol string) ([]string, error) {
	depth, _ := ctx.Value(movedDepthKey{}).(int)
	if depth >= maxMovedDepth {
		return nil, fmt.Errorf("%w: the tombstone triggers of %s chain through %d renamed tables; re-install the tombstone guard of each (fencedsql-schema -apply)", ErrTombstoneMoved, other, depth)
	}
	other, key, err := PrimaryKeyColumns(ctx, query, ts, other)
	if err != nil {
		return nil, err
	}
	if len(key) == 0 {
		return nil, fmt.Errorf("%w: %s, which keeps them, has no primary key to keep its tombstones under; drop its tombstone triggers or give it one", ErrTombstoneMoved, other)
	}
	return TombstoneDDLFor(context.WithValue(ctx, movedDepthKey{}, depth+1), query, ts, other, key, tokenCol)
}

// TombstoneLister is implemented by a Tombstoner that can list the database's
// tombstone tables, so that schema.MaxToken counts the tokens that only tombstones
// keep (a key deleted under the highest token leaves it nowhere else). Every tombstone
// table has a fence_token column holding the token of its key's last delete.
type TombstoneLister interface {
	// TombstoneTablesQuery returns a query listing the database's tombstone tables,
	// one row each: (schema, or "" for the connection's own, table name).
	TombstoneTablesQuery() string
}

// TombTrigger is one tombstone trigger of a namespace as a TombstoneCarrier reads it:
// its name, the table it is on, and the tombstone table it records into ("" when its
// body and name do not tell).
type TombTrigger struct {
	Name, On, Records string
}

// TombCarry is a TombstoneCarrier's plan for table: the tombstone triggers of the
// namespace (triggers), of which those isOwn names are table's own names, and ownTomb
// is table's own tombstone table; fold is the namespace's comparison of table names
// (MySQL/MariaDB: exact; SQLite: ASCII case).
//
// It returns ddl completed as TombstoneCarrier describes: first ts's install on each
// table that keeps triggers of table's own names (TombstoneMovedDDL), then ddl, then
// merge(t) for each tombstone table t the other-named tombstone triggers on table
// record into (merge returns "" for one that does not exist), then drop(n) for each
// of those triggers.
func TombCarry(ctx context.Context, query CatalogQuery, ts Tombstoner, table TableName, tokenCol string, ddl []string,
	triggers []TombTrigger, isOwn func(trigger string) bool, ownTomb string, fold func(string) string,
	merge func(tomb string) string, drop func(trigger string) string) ([]string, error) {
	var others, dropped, from []string
	seenOther, moved := map[string]bool{}, map[string]bool{}
	for _, tr := range triggers {
		onTable := fold(tr.On) == fold(table.Name)
		if isOwn(tr.Name) {
			if !onTable && !seenOther[fold(tr.On)] {
				seenOther[fold(tr.On)] = true
				others = append(others, tr.On)
			}
			continue
		}
		if !onTable {
			continue
		}
		dropped = append(dropped, tr.Name)
		if tr.Records != "" && fold(tr.Records) != fold(ownTomb) && !moved[fold(tr.Records)] {
			moved[fold(tr.Records)] = true
			from = append(from, tr.Records)
		}
	}
	var out []string
	for _, o := range others {
		install, err := TombstoneMovedDDL(ctx, query, ts, TableName{Schema: table.Schema, Name: o}, tokenCol)
		if err != nil {
			return nil, fmt.Errorf("the tombstone triggers of %s's name are on %s (a rename keeps a table's triggers and their names), whose own guard installs first: %w", table.Name, o, err)
		}
		out = append(out, install...)
	}
	out = append(out, ddl...)
	if len(dropped) == 0 {
		return out, nil
	}
	for _, t := range from {
		if q := merge(t); q != "" {
			out = append(out, q)
		}
	}
	for _, n := range dropped {
		out = append(out, drop(n))
	}
	return out, nil
}
