package mysql

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// TestFenceFunctionTextPinned pins the fence function's text of this marker
// (oneStepMarker): fenceFunction reports a fence function whose text differs from
// fenceFuncDDL's as a changed guard, so a change of the text needs a new marker, or
// the fences the release before installed would be reported (and their tables
// refused). It also checks that the parameters and characteristics fenceFunction
// expects are the ones fenceFuncDDL declares.
func TestFenceFunctionTextPinned(t *testing.T) {
	ddl := dialectImpl{}.fenceFuncDDL(dialect.TableName{Name: "ledger"}, "fence_token")
	sum := sha256.Sum256([]byte(ddl[1]))
	if got := hex.EncodeToString(sum[:8]); got != fenceTextPin {
		t.Fatalf("the fence function's text of %q changed (hash %s, pinned %s): bump oneStepMarker and this pin\n%s", oneStepMarker, got, fenceTextPin, ddl[1])
	}
	if !strings.Contains(ddl[1], "(cur BIGINT, tok BIGINT, fl BIGINT) RETURNS INT NOT DETERMINISTIC NO SQL SQL SECURITY INVOKER COMMENT") {
		t.Fatalf("fenceFuncDDL declares other parameters or characteristics than fenceFuncText expects: %s", ddl[1])
	}
	if fenceFuncText(ddl[1]).body == "" {
		t.Fatal("fenceFuncText finds no body")
	}
}

// fenceTextPin is the pinned hash of fenceFuncDDL's CREATE FUNCTION for ledger.
const fenceTextPin = "22fed74c41620581" // oneStepMarker v4
