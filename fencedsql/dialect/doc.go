// Package dialect defines the interfaces a database dialect implements for fencedsql,
// and the types they exchange: what package database/sql/driver is to database/sql.
// Applications do not use it; they import a dialect package (dialects/postgres,
// dialects/mysql, dialects/sqlite), which registers a fenced driver and exports its
// Dialect value, and package fencedsql.
//
// A dialect implements Dialect: its name, lexical rules (Syntax), placeholders,
// identifier quoting, the classification of driver errors (ErrorInfo), the catalog query
// that lists a guarded table's columns, and the session check. It may implement
// optional interfaces, discovered with a type assertion like database/sql/driver's:
//
//   - Guarder, NotNullFixer: the database-side guard and the DDL that fixes a table's
//     fencing columns;
//   - Tombstoner: the tombstone guard (a deleted row is not re-inserted under an older
//     token), keyed by the primary key's own types (KeyColumn);
//   - Floorer, Registrar: the token floor table (FloorTable) and the registry of guarded
//     tables (RegistryTable);
//   - SideDoorFinder, SchemaLinter, Privileger, ReplicationChecker: the catalog
//     inspections the schema checks report (SideDoor, SchemaProblem, PrivilegeProblem,
//     ReplicationFinding), each with the statements that fix what they find;
//   - SessionTracker, DSNParser, DSNChecker: session settings read without a round
//     trip, the driver's own DSN syntax, and the DSN parameters refused when a pool
//     opens;
//   - TxOpenQuerier: whether a connection is still inside a transaction after a
//     statement that runs dynamic SQL succeeded (WithDynamicSQL);
//   - TxMarker: the savepoint statements that show whether such a statement ended
//     the transaction and began another, or began one outside any;
//   - TxProber: whether a connection is still inside a transaction after a failed
//     statement, where no query tells it (SQLite ends a transaction on some errors);
//   - ConnLossJudge: the driver's own errors for a lost connection or a session the
//     server ended (a check query cut so is not a schema problem);
//   - SendChecker: the client driver's own reading of what is sent (its lexer, when it
//     substitutes arguments into the text; argument values it takes as options).
//
// Every name the guards create starts with "fencedsql_" (FloorTable, RegistryTable,
// TombstoneTablePrefix): the fenced driver refuses statements that write those objects.
//
// Contracts: queries a dialect returns are read-only unless their doc says otherwise;
// identifiers reach SQL text only through QuoteIdent (TableName.Quote), values only as
// bind arguments; CatalogQuery hands back rows as text. Only the dialect packages of
// this module implement these interfaces today, and they may grow before a first tagged
// release.
package dialect
