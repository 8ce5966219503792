// Package ormtest runs real applications' data-access layers over the fenced driver on
// real servers: GORM (PostgreSQL, MySQL/MariaDB, SQLite), bun (pgdialect, mysqldialect,
// sqlitedialect), sqlc-style generated code (the sqlc* sub-packages) and ent (PostgreSQL,
// MySQL/MariaDB, SQLite; schema in entschema, generated client in ent, checked in and regenerated
// by `go generate ./internal/ormtest/...`, which CI checks changes nothing). Issue 10.
//
// Every test is table-driven over ORM × database × model shape × operation, and every
// case checks the row through a plain (unfenced) *sql.DB on the same database:
//
//	Fresh            a newer token lands: fence_token = token, version advanced
//	Stale            an older token fails with fencedsql.ErrFenced; the row is unchanged
//	NoToken          a write without a token fails with fencedsql.ErrNoToken
//	VersionConflict  ExpectVersion(stale) fails with fencedsql.ErrVersionConflict
//	NoResurrection   after a newer holder's DELETE, an older holder's INSERT/upsert/Save
//	                 of the same id fails with ErrFenced and the row stays gone (G9)
//	ForUpdate        a newer holder reads FOR UPDATE in a bound transaction; an older
//	                 holder's later write fails with ErrFenced, even if the newer one only
//	                 read (G10)
//
// Beyond the tables (red-team rt53c): TestGORMGeneratedChains and TestBunGeneratedChains
// draw random GORM and bun call chains and hold each to the Fresh/Stale oracle (knobs and
// replay in generated_test.go); TestConcurrentHoldersGORM races a newer and an older
// holder on the same keys; TestSoftDeletedStaysDeleted, TestMixedTokensAllOrNothing,
// TestGORMAssociations (two guarded tables) and TestAutoIncrementKeys.
//
// TestEntConstraintError checks that ent's IsConstraintError (a match on the driver's
// text) recognises a duplicate through the fenced driver as on the plain one.
//
// Model shapes: "rw" maps fence_token and version read-write (the wrapper must replace the
// caller's values, which the tests set to lies), "ro" maps them read-only (GORM `->`, bun
// scanonly), "bare" does not declare them.
//
// Run one ORM and database, or one kind of case:
//
//	go test ./internal/ormtest -run 'GORM/postgres'
//	go test ./internal/ormtest -run 'Bun/mysql/rw/Save'
//	go test ./internal/ormtest -run 'Ent'
//	go test ./internal/ormtest -run 'Test[A-Za-z]+/[a-z]+/NoResurrection'
//	go test ./internal/ormtest -run 'Test[A-Za-z]+/[a-z]+/ForUpdate'
//
// GORM's SQL is logged through t.Logf (shown with -v or on failure).
package ormtest
