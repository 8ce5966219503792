package postgres_test

import (
	"testing"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/internal/fencetest"
)

// The session suite (docs/design.md G11): standard_conforming_strings and
// client_encoding are verified before every guarded write, however they changed.
func TestSessionSettings(t *testing.T) {
	fencetest.RunSession(t, fencetest.Postgres(), postgres.Dialect, fencetest.PostgresSessionSetup, fencetest.PostgresSessionCases())
}
