package dialect

// Guarder is implemented by dialects that can install database-side guards: triggers
// that refuse, inside the database, writes that bypass the wrapper (an UPDATE that
// lowers the token or does not advance the version, and where the dialect can tell, a
// DELETE that did not go through the fencing UPDATE). The dialect packages of this
// module implement it; schema.Check reports a missing guard with the DDL that installs it.
type Guarder interface {
	// GuardDDL returns the statements that install the guard on table, in order.
	GuardDDL(table TableName, tokenCol, versionCol string) []string
	// UnguardDDL returns the statements that remove it.
	UnguardDDL(table TableName) []string
	// GuardInstalledQuery returns a query yielding one row with 1 when the guard is
	// installed on table, 0 or no row otherwise.
	GuardInstalledQuery(table TableName) (query string, args []any)
}

// NotNullFixer is implemented by dialects that can make an existing column NOT NULL.
// schema.Check and the lazy check before the first guarded write propose its
// statements for a nullable fencing column; a dialect without it (or returning no
// statement, like SQLite, which cannot alter a column) gets the advice to rebuild the
// table.
type NotNullFixer interface {
	// NotNullDDL returns the statements that make column of table NOT NULL (DEFAULT 0).
	// Rows holding NULL in it must be fixed first.
	NotNullDDL(table TableName, column string) []string
}
