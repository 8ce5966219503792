package schema

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// RegisterTables records specs in the registry of db's database (creating the registry
// table when missing), so that every fenced pool on that database guards them whether
// or not its DSN lists them. fencedsql-schema -apply calls it. Run it on a plain
// connection. A session whose settings would record another name than the one given
// (dialect.ToolSessionChecker: a PostgreSQL client_encoding other than UTF8, a MySQL
// character_set_client other than UTF-8) is refused with a *fencedsql.SessionError
// before anything is written.
func RegisterTables(ctx context.Context, db *sql.DB, d dialect.Dialect, specs ...GuardSpec) error {
	if err := complete("RegisterTables", d); err != nil {
		return err
	}
	r, ok := d.(dialect.Registrar)
	if !ok {
		return configErr("RegisterTables: the dialect keeps no registry")
	}
	// The session first: one whose encoding converts the names would record another
	// name than the one given (red-team rt56a F4).
	if err := recordsSession(ctx, db, d, "RegisterTables"); err != nil {
		return err
	}
	for _, s := range r.RegistryDDL() {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("fencedsql: RegisterTables: creating %s: %w", dialect.RegistryTable, err)
		}
	}
	for _, spec := range specs {
		spec = spec.withDefaults()
		if _, problem := spec.parse(); problem != "" {
			return configErr("RegisterTables: table %q: %s", spec.Table, problem)
		}
		q, args := r.RegisterQuery(spec.Table, spec.TokenColumn, spec.VersionColumn)
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("fencedsql: RegisterTables %s: %w", spec.Table, err)
		}
	}
	return nil
}
