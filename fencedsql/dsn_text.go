package fencedsql

import "github.com/fencedsql/fencedsql/internal/secret"

// checkDSNText refuses a DSN that is not one line: one holding a line break, NUL or
// another control character (secret.ControlAt; a tab is a blank). No driver's DSN form
// needs one, and such a DSN was read with text that is not the DSN — typically the
// other lines of an env file read whole (PGPASSWORD=…, REDIS_URL=redis://:pw@…), whose
// secrets the DSN does not name as its passwords (secret.Passwords), so no mask finds
// them, while a driver's parse error (pgx's "cannot parse `…`") and this package's
// errors quoting a parameter's value (fenced_tables) print them (red-team rt45e F3).
// The *ConfigError quotes nothing of the DSN. It runs wherever this package reads a
// DSN (sql.Open with a fenced driver name, OpenDB over DSNConnector), before any
// parameter is read and before the driver sees the DSN; only on opening a pool.
func checkDSNText(dsn string) error {
	if secret.ControlAt(dsn) >= 0 {
		return configErr("the DSN holds a line break or another control character: a DSN is one line (a keyword/value DSN separates its pairs with blanks); read from a file or a variable, it must hold the DSN alone, not an env file's other lines (the DSN is not shown: it may hold a password)")
	}
	return nil
}

// maskDSNErr returns err, an error of reading dsn (its parameters of this package, the
// options they stand for), with the DSN's passwords masked (secret.Passwords,
// secret.Redact): a *ConfigError quoting a parameter's value or key keeps its type with
// its message masked; any other error is masked as a driver's is (maskPassword). It
// runs on the error path of opening a pool only.
func maskDSNErr(err error, dsn string) error {
	if err == nil {
		return nil
	}
	pw := secret.Passwords(dsn)
	if ce, ok := err.(*ConfigError); ok {
		if len(pw) == 0 {
			return err
		}
		if m := secret.Redact(ce.Msg, pw...); m != ce.Msg {
			return &ConfigError{Msg: m}
		}
		return err
	}
	return maskPassword(err, pw)
}
