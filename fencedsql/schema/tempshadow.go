package schema

import (
	"context"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// tempShadowed reports whether, in the session q runs on, t resolves to a temporary
// table (dialect.TempTableFinder: PostgreSQL, SQLite; dialect.TempShadowFinder:
// MySQL/MariaDB), false when the dialect can tell neither. Check then judges nothing
// of the name and returns no Fix (red-team rt46c F5): the temporary table shadows
// the table meant, Check's queries would judge it, and the Fix — whose DDL names the
// table as the session resolves it — would install the guard on it (gone with the
// session), the permanent table left without one and nothing saying so.
func tempShadowed(ctx context.Context, q dialect.CatalogQuery, d dialect.Dialect, t dialect.TableName) (bool, error) {
	if f, ok := d.(dialect.TempTableFinder); ok {
		return f.TempTable(ctx, q, t)
	}
	if f, ok := d.(dialect.TempShadowFinder); ok {
		return f.TempShadow(ctx, q, t)
	}
	return false, nil
}

// tempShadowProblem is Check's problem for a name that resolves to a temporary table.
func tempShadowProblem(t dialect.TableName) string {
	return "in the checking session the name " + t.String() + " resolves to a TEMPORARY table, which shadows the table meant: nothing of it was judged, and no Fix is given (its DDL would install the guard on the temporary table); run the check on a session without it (drop the temporary table, or use a fresh connection)"
}
