package dialect

import "github.com/fencedsql/fencedsql/fencedsql/internal/sqlitepragma"

// SQLiteJournalModes returns the journal_mode values a fenced pool lets a PRAGMA
// statement set, lower case: the SQLite dialect's DSN check accepts the same ones.
func SQLiteJournalModes() []string { return sqlitepragma.JournalModes() }

// SQLiteSynchronousLevels returns the synchronous values a fenced pool lets a PRAGMA
// statement set, lower case (names and numbers): the SQLite dialect's DSN check accepts
// the same ones, and refuses NORMAL with WAL (SQLiteDurable).
func SQLiteSynchronousLevels() []string { return sqlitepragma.SynchronousLevels() }

// SQLiteDurable returns why a connection with this journal mode and synchronous level
// (as SQLite reports them, or as a DSN spells them) may lose a committed transaction
// at a power loss or OS crash, "" when it does not: journal_mode OFF, synchronous OFF,
// synchronous NORMAL in WAL mode. The one decision of the planner, the SQLite
// dialect's DSN check and its session check.
func SQLiteDurable(journalMode, synchronous string) string {
	return sqlitepragma.Durable(journalMode, synchronous)
}
