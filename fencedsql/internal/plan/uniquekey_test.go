package plan

import (
	"errors"
	"strings"
	"testing"
)

// WithUniqueKeyTombstones marks the dialect's tombstone guard as written for each
// table's unique indexes (SQLite's dialect.UniqueTombstoner).
func WithUniqueKeyTombstones() testOption {
	return func(c *PlannerConfig) { c.UniqueKeyTombstones = true }
}

// CREATE UNIQUE INDEX of a guarded table is refused whatever WithDDL says where the
// tombstone guard compares the unique indexes of the install (red-team rt53d F1: a
// REPLACE colliding on the new index deleted a row of another key unrecorded, and a
// stale holder re-inserted it through the same pool), on columns, on an expression
// and partial alike, under any spelling of the table. Non-unique indexes, REINDEX,
// DROP INDEX, unique indexes of other tables, and every one of these where the guard
// does not depend on unique keys (MySQL/MariaDB, PostgreSQL) pass under WithDDL.
func TestUniqueIndexOfGuardedTableRefused(t *testing.T) {
	refused := []string{
		"CREATE UNIQUE INDEX u ON accounts (balance)",
		"CREATE UNIQUE INDEX IF NOT EXISTS main.u ON accounts (balance, owner)",
		`create unique index "u" on "ACCOUNTS"(lower(email))`,
		"CREATE UNIQUE INDEX u ON [accounts] (email) WHERE email IS NOT NULL",
		"CREATE /* c */ UNIQUE INDEX u ON `Accounts` (email COLLATE NOCASE)",
		"CREATE UNIQUE INDEX u ON ledger (ref)",
	}
	rw := newTestRewriter(t, sqliteTest, Guard("accounts"), Guard("ledger"), WithDDL(true), WithUniqueKeyTombstones())
	for _, sql := range refused {
		p, err := rw.Rewrite(sql, false)
		var r *Refusal
		if !errors.As(err, &r) {
			t.Errorf("%s = %v, %v; want refused", sql, p, err)
			continue
		}
		if !strings.Contains(r.Reason, "CREATE UNIQUE INDEX on a guarded table") || !strings.Contains(r.Reason, "fencedsql-schema -apply") {
			t.Errorf("%s refused with %v; want the unique-index refusal naming the Fix", sql, err)
		}
	}
	passes := []string{
		"CREATE INDEX i ON accounts (balance)",
		"CREATE INDEX IF NOT EXISTS i ON accounts (lower(email)) WHERE email IS NOT NULL",
		"CREATE UNIQUE INDEX u ON other (accounts)",
		"CREATE UNIQUE INDEX accounts_u ON other (x)",
		"DROP INDEX u",
		"DROP INDEX IF EXISTS main.u",
		"REINDEX accounts",
		"ALTER TABLE accounts ADD COLUMN email2 TEXT",
	}
	for _, sql := range passes {
		if _, err := rw.Rewrite(sql, false); err != nil {
			t.Errorf("%s: %v; want passed under WithDDL", sql, err)
		}
	}
	for _, d := range []testDialect{mysqlTest, pgTest, sqliteTest} {
		rw := newTestRewriter(t, d, Guard("accounts"), WithDDL(true))
		if _, err := rw.Rewrite("CREATE UNIQUE INDEX u ON accounts (balance)", false); err != nil {
			t.Errorf("%s without unique-key tombstones: %v; want passed under WithDDL", d.name, err)
		}
	}
	// without WithDDL the DDL rule refuses it as any DDL naming a guarded table
	rw = newTestRewriter(t, sqliteTest, Guard("accounts"), WithUniqueKeyTombstones())
	if _, err := rw.Rewrite("CREATE INDEX i ON accounts (balance)", false); !isRefusal(err) {
		t.Errorf("CREATE INDEX without WithDDL: %v; want refused", err)
	}
}
