package mysql_test

import (
	"testing"

	"github.com/fencedsql/fencedsql/internal/fencetest"
)

// TestMySQLClaimOfAbsentKeyLongIntegerLiteral (red-team rt47e F2): MariaDB's side of
// postgres' TestClaimOfAbsentKeyLongIntegerLiteral — a 19-digit integer literal pins
// the key; the claim records it and an older INSERT of the key is fenced.
func TestMySQLClaimOfAbsentKeyLongIntegerLiteral(t *testing.T) {
	_, admin, db := absentMy(t)
	fencetest.ClaimAbsentLiteralKeys(t, db, []string{"1000000000000000000", "1234567890123456789", "9223372036854775807"},
		func(lit string) int64 { return tombToken(t, admin, "acc", "id = "+lit) })
}
