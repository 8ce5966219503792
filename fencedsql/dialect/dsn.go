package dialect

// DSNParser is implemented by dialects whose driver has a DSN syntax of its own, so that
// the wrapper finds its parameters where that driver would: QueryStart returns the
// index of the '?' that starts dsn's URL-style query string (-1 for none), and keyValue
// true when dsn is in keyword/value form (PostgreSQL's "host=h dbname=d"), in which the
// parameters are keywords. Without it (a driver the wrapper knows nothing about) the
// URL form is assumed unless dsn looks like keyword/value text (no "://", an '='
// before any '?').
type DSNParser interface {
	QueryStart(dsn string) (q int, keyValue bool)
}

// DSNChecker is implemented by dialects whose driver turns DSN parameters into session
// settings the wrapper never sees as statements (modernc.org/sqlite runs every
// _pragma= on each new connection): CheckDSN returns a description of the first
// parameter that sets a protected setting to an unsafe value, or that turns off a
// guarantee of the database the dialect relies on (SQLite's nolock, a VFS without file
// locking: writers no longer serialised) ("" for none), and the
// wrapper refuses to open the pool (ErrConfig). It reads the DSN's parameters only
// and never echoes other parts of it (a DSN may hold a password).
type DSNChecker interface {
	CheckDSN(dsn string) string
}
