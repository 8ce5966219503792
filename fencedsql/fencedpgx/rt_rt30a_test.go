package fencedpgx_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// TestRTrt30aTxOptionsUpperCaseIso (over-refusal, minor). pgx's TxIsoLevel is a string
// type pasted into the BEGIN text, and PostgreSQL reads it case-insensitively: code that
// writes pgx.TxOptions{IsoLevel: "SERIALIZABLE"} (or "REPEATABLE READ", "READ ONLY")
// ran serializable before rt28a F7. checkTxOptions now compares with pgx's lower-case
// constants exactly and refuses it (ErrUnsupported), though the text is a keyword
// sequence that carries no statement.
//
// Right behaviour: accept the pgx constants case-insensitively (strings.EqualFold) and
// send the constant, refusing only text that is not one of them.
func TestRTrt30aTxOptionsUpperCaseIso(t *testing.T) {
	ctx := context.Background()
	_, _, db := oneConnDB(t, ctx, "INSERT INTO accounts (id, balance) VALUES (1, 1);")
	tx, err := db.BeginTx(fencedsql.WithToken(ctx, 7), pgx.TxOptions{IsoLevel: "SERIALIZABLE", AccessMode: "READ WRITE"})
	if err != nil {
		t.Fatalf("BeginTx with IsoLevel \"SERIALIZABLE\": %v; want it accepted (serializable)", err)
	}
	_ = tx.Rollback(ctx)
}
