package dialect

// TxEnder is implemented by a dialect whose COMMIT and ROLLBACK a session setting can
// change into something more: MySQL/MariaDB's completion_type, which a stored function
// or a trigger may set unseen (CHAIN opens a new transaction after each COMMIT and
// ROLLBACK, in which later "autocommit" statements are acknowledged and never
// committed; RELEASE ends the session). The wrapper checks the setting when it checks
// the session, and ends every transaction it commits or rolls back with EndTx's
// statement instead of the driver's Commit or Rollback, where the session checks are
// on (a mock driver keeps its Commit and Rollback expectations).
type TxEnder interface {
	// EndTx returns the statement that commits (commit) or rolls back the current
	// transaction and does nothing else, whatever the session's settings.
	EndTx(commit bool) string
}
