// Package schema is fencedsql's schema toolkit: it inspects a database's guarded tables
// and proposes (never runs) the statements that make them fit for fencing, and it keeps
// the database-side state the guards rely on. The command fencedsql/cmd/fencedsql-schema
// is built on it; operators and migration tools call it directly, on a plain
// (non-fenced) *sql.DB, with a dialect's Dialect value (dialects/postgres, …).
//
// What it offers:
//
//   - Check reports, per guarded table (GuardSpec), whether it has both fencing columns
//     NOT NULL, the database-side guard and the tombstone guard installed, which side
//     doors lead around the fence, whether the server may forget an acknowledged write
//     at a failover, and — with WithRoles — which of the application role's privileges
//     lead around the guards; each problem in words, with the DDL that fixes it (Fix).
//   - RegisterTables records the guarded tables in the database's registry, which every
//     fenced pool on that database reads: a registered table is guarded whatever a DSN
//     lists.
//   - TombstoneFix and PurgeTombstones install and bound the tombstone guard (a deleted
//     row is not re-inserted under an older token).
//   - TokenFloor, TokenFloors, RaiseTokenFloor and MaxToken keep tokens from going back
//     across a failover or a lock-service switch; they work on the floor tables the
//     installed guards read, and fail with ErrNoFloorGuard where no guard reads one
//     and with ErrFloorUncovered where a guarded table is not held to the floor.
//   - Columns and Lint are the verdict on one table's columns and declaration that the
//     fenced driver's lazy check (before a table's first guarded write) and Check share:
//     the same problems, the same statements.
//
// Errors: a call refused before anything is sent is a *ConfigError; a failed catalog
// query is returned wrapped, with the reports made so far (the answer is unknown, not
// "unfit"); a floor call where no installed guard reads a floor is a *FloorError. Nothing here writes except RegisterTables, RaiseTokenFloor and
// PurgeTombstones, which say so.
package schema
