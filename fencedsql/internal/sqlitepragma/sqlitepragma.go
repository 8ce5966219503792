// Package sqlitepragma holds the one decision on SQLite's durability pragmas
// (journal_mode, synchronous) that the planner (a PRAGMA statement through a fenced
// pool), the SQLite dialect's DSN check (the pragmas modernc.org/sqlite runs on every
// new connection) and its per-connection session check (the settings a connection
// actually has) share, through fencedsql/dialect for the dialect: the planner may not
// import a dialect, nor a dialect the wrapper's internal packages.
package sqlitepragma

import "strings"

// JournalModes returns the journal_mode values that may be set (lower case): every
// mode but OFF, which removes the rollback journal, so that a failed statement or a
// ROLLBACK no longer undoes a fenced transaction's writes. MEMORY keeps the journal in
// memory: a ROLLBACK still undoes, and a commit is as durable as in DELETE mode; a
// crash of the process in the middle of a transaction may corrupt the file (SQLite's
// documentation), which forgets no acknowledged write.
func JournalModes() []string {
	return []string{"delete", "truncate", "persist", "memory", "wal"}
}

// SynchronousLevels returns the synchronous values that may be set (lower case,
// names and numbers): every level but OFF (0), which acknowledges commits the disk may
// not have. NORMAL (1) is durable with a rollback journal, and is refused together with
// WAL (Durable).
func SynchronousLevels() []string {
	return []string{"full", "normal", "extra", "1", "2", "3"}
}

// Durable returns why the combination of a journal mode and a synchronous level
// (either as SQLite reports it — journal_mode lower case, synchronous a number — or as
// a DSN or PRAGMA spells it, any letter case; "" for a setting not known) may lose a
// committed transaction, "" when it does not:
//
//   - journal_mode OFF: no rollback journal (JournalModes);
//   - synchronous OFF (0) in any mode: commits are acknowledged before the disk has
//     them, so a power loss or OS crash forgets them;
//   - synchronous NORMAL (1) in WAL mode: "a transaction committed in WAL mode with
//     synchronous=NORMAL might roll back following a power loss or system crash"
//     (sqlite.org/pragma.html#pragma_synchronous) — WAL is not synced at each commit.
//
// NORMAL with a rollback journal (DELETE, TRUNCATE, PERSIST) syncs the journal and
// the database before the commit point, as FULL does, and is accepted: SQLite
// documents only "a very small (though non-zero) chance" of corruption at a power
// failure on older file systems. FULL (2) and EXTRA (3) are accepted in every mode
// (FULL is modernc.org/sqlite's default, in WAL mode too).
func Durable(journalMode, synchronous string) string {
	jm, sy := strings.ToLower(strings.TrimSpace(journalMode)), strings.ToLower(strings.TrimSpace(synchronous))
	switch {
	case jm == "off":
		return "journal_mode OFF removes the rollback journal: a failed statement or a ROLLBACK no longer undoes a fenced transaction's writes"
	case sy == "off" || sy == "0":
		return "synchronous OFF acknowledges commits the disk may not have: a power loss or OS crash forgets acknowledged writes (a tombstone, a raised floor, a row's newer token)"
	case jm == "wal" && (sy == "normal" || sy == "1"):
		return "synchronous NORMAL in WAL mode acknowledges commits before the write-ahead log is synced: a power loss or OS crash rolls them back (a tombstone, a raised floor, a row's newer token is forgotten); use synchronous FULL (or EXTRA) with WAL, or NORMAL with a rollback journal"
	}
	return ""
}
