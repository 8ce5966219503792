// Package redteam holds the red-team catalogue of issue 11 (acceptance 1): a
// table-driven test that sends hostile and harmless statements through the fenced
// drivers on real PostgreSQL, MariaDB and SQLite.
//
// Every hostile entry is first run on the raw driver against a fresh database with a
// guarded table accounts (rows seeded with fence_token 50) and must change data there
// (rows or catalog) — an entry that changes nothing raw is a wrong entry and fails. The
// same statements are then sent through the fenced driver with a stale token (10) on
// another fresh database: they must fail with the expected typed error
// (ErrUnsupported, ErrFenced, ErrNoToken) and change nothing. Fenced entries are also run
// with a newer token (100), which must do what the raw driver did, with the changed
// rows stamped. Harmless entries must behave byte-for-byte like the raw driver: the same
// results, the same resulting database, and the same statement text (and arguments)
// reaching the driver, as seen by a recording driver.Connector under the wrapper.
//
// The package has no non-test code; run it with
//
//	bash scripts/test.sh ./internal/redteam/
//
// or, with the servers' variables exported (testdb), go test ./internal/redteam/.
package redteam
