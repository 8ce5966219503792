package fencedsql

import (
	"errors"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// dialectComplete refuses d, the configured dialect, when it hides optional
// capabilities of a dialect it is built on (a field of it, embedded or not, holds that
// dialect) or of the registered dialect whose Name it bears: dialect.CompleteRegistered, the
// one check package schema runs too. A value that embeds the stock dialect as its
// dialect.Dialect interface — the natural way to customise one, the stock dialects
// being interface values of unexported types — answers none of the optional
// interfaces, and the wrapper takes each missing one for "this database has no such
// thing": the registry of guarded tables and the guard triggers were not read, and a
// stale write to a table the database records as guarded landed (red-team rt44b F2),
// under the stock name or any other ("SQLite", "sqlite3", "sqlite-custom": rt45c F1).
// A dialect meant to leave a capability out names it in OmittedCapabilities
// (dialect.Reduced); one written from scratch, built on no dialect, is its own.
func dialectComplete(d dialect.Dialect) error {
	err := dialect.CompleteRegistered(d)
	var ie *dialect.IncompleteError
	if errors.As(err, &ie) {
		return &ConfigError{Msg: "WithDialect: " + ie.Error(), Err: ie}
	}
	return err
}
