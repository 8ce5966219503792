package fencedsql

import (
	"strconv"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// dialectComplete refuses d, the configured dialect, when it bears the Name of a
// dialect a dialect package registered (the stock postgres, mysql, sqlite) without
// being that dialect and lacks optional capabilities that one implements
// (dialect.MissingCapabilities). A value that embeds the stock dialect as its
// dialect.Dialect interface — the natural way to customise one, the stock dialects
// being interface values of unexported types — answers none of the optional
// interfaces, and the wrapper takes each missing one for "this database has no such
// thing": the registry of guarded tables and the guard triggers were not read, and a
// stale write to a table the database records as guarded landed (red-team rt44b F2).
// A dialect meant to leave a capability out must bear a name of its own.
func dialectComplete(d dialect.Dialect) error {
	for _, stock := range registeredDialects() {
		if stock.Name() != d.Name() || sameDialect(stock, d) {
			continue
		}
		if missing := dialect.MissingCapabilities(d, stock); len(missing) > 0 {
			return configErr("WithDialect: the dialect is named %s but lacks capabilities the %s dialect has: %s; a value that embeds the stock dialect as its dialect.Dialect interface hides every optional interface, so the wrapper would skip their checks (what the database records as guarded among them); forward each of them (a method that calls the stock dialect's), or give a dialect meant to lack them a Name of its own",
				strconv.Quote(d.Name()), strconv.Quote(stock.Name()), strings.Join(missing, ", "))
		}
	}
	return nil
}
