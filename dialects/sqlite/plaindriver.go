package sqlite

import (
	"strconv"

	sqlite "modernc.org/sqlite"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// The plain driver's refusal of this package's parameters.
//
// modernc.org/sqlite ignores DSN parameters it does not know. A DSN holding
// fenced_tables opened by modernc's own driver — sql.Open("sqlite", dsn) (the raw name
// by mistake, an ORM whose driver name defaults to "sqlite") or
// fencedsql.OpenDB(sqlite.NewConnector(dsn)) (whose DSN the wrapper cannot read) —
// would open a pool that guards nothing, without a word (red-team rt31d F1, F2). The
// servers PostgreSQL and MariaDB refuse an unknown parameter; for SQLite this package
// refuses it: init registers, once, a connection hook on modernc's package-level
// driver (the one registered as "sqlite", which NewConnector's connectors use too)
// that fails a connection whose DSN holds a parameter of this package
// (fencedsql.DSNParam, in any place: fencedsql.MisplacedDSNParam) with a
// *fencedsql.ConfigError. The hook is package-level state
// of modernc's, registered once in init as the driver name is; it reads nothing but
// the DSN and keeps no state. A DSN without such a parameter, and "fenced-sqlite"
// (which opens its own sqlite.Driver, never hooked, with the parameters already taken
// out), are unaffected.
//
// modernc runs connection hooks after it has opened the database file (creating an
// empty one where none was) and run the DSN's pragmas, so the refusal comes before any
// statement of the application, not before the file is opened.
func init() {
	sqlite.RegisterConnectionHook(refusePlainDriverParams)
}

// refusePlainDriverParams is the connection hook init registers.
func refusePlainDriverParams(_ sqlite.ExecQuerierContext, dsn string) error {
	// Text that reads as a parameter of this package where no reader takes one (glued
	// into another parameter's value, after '#': red-team rt43b F1) is refused as
	// "fenced-sqlite" refuses it, with the same words: opening that name would not help.
	if err := fencedsql.MisplacedDSNParam(dsn); err != nil {
		return err
	}
	p := fencedsql.DSNParam(dsn)
	if p == "" {
		return nil
	}
	// Named by the parameter it stands for: the DSN's own text may hold a secret.
	return &fencedsql.ConfigError{Msg: "the DSN opened with modernc.org/sqlite's own driver (sql.Open(\"sqlite\") or sqlite.NewConnector) holds a parameter of this package (" + p + ", or a spelling of it), which that driver ignores: the pool would guard nothing; open " + strconv.Quote(DriverName) + " (sql.Open(" + strconv.Quote(DriverName) + ", dsn)), or fencedsql.OpenDB(fencedsql.DSNConnector(a modernc.org/sqlite Driver, dsn), fencedsql.WithDialect(the fencedsql SQLite dialect))"}
}
