package fencedsql

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestErrorJSON (red-team rt43d F1, F2): the JSON that GORM's PostgreSQL dialector reads
// from an error that is not a *pgconn.PgError. A DuplicateError carries Code and
// Message (its text, with the constraint's name) and never the duplicated values (the
// driver's Detail); the outcome wrapper marshals as the error it wraps, so the same
// DuplicateError in autocommit reads the same.
func TestErrorJSON(t *testing.T) {
	pe := &pgconn.PgError{Severity: "ERROR", Code: "23505", Message: `duplicate key value violates unique constraint "accounts_pkey"`,
		Detail: "Key (id)=(4242) already exists.", ConstraintName: "accounts_pkey", TableName: "accounts"}
	dup := &DuplicateError{Table: "accounts", Constraint: "accounts_pkey", Code: "23505", Err: pe}
	for name, err := range map[string]error{"DuplicateError": dup, "outcome": withOutcomeAs(dup, NotCommitted)} {
		b, jerr := json.Marshal(err)
		if jerr != nil {
			t.Fatalf("%s: %v", name, jerr)
		}
		var got struct{ Code, Message, Table, Constraint string }
		if jerr := json.Unmarshal(b, &got); jerr != nil {
			t.Fatalf("%s: %s: %v", name, b, jerr)
		}
		if got.Code != "23505" || got.Message != dup.Error() || got.Table != "accounts" || got.Constraint != "accounts_pkey" {
			t.Errorf("%s: JSON %s, want Code 23505, Message %q, Table, Constraint", name, b, dup.Error())
		}
		if strings.Contains(string(b), "4242") {
			t.Errorf("%s: JSON %s quotes the duplicated value", name, b)
		}
		if !errors.Is(err, ErrDuplicate) {
			t.Errorf("%s: %v does not wrap ErrDuplicate", name, err)
		}
	}
	// The outcome wrapper of a driver's error marshals as the driver's error; of one
	// that is no JSON object, as {}.
	b, err := json.Marshal(withOutcomeAs(pe, NotCommitted))
	if err != nil || !strings.Contains(string(b), `"Code":"23505"`) {
		t.Errorf("outcome of a *pgconn.PgError: %s, %v; want the PgError's fields", b, err)
	}
	if b, err := json.Marshal(withOutcomeAs(errors.New("x"), Unknown)); err != nil || string(b) != "{}" {
		t.Errorf("outcome of a plain error: %s, %v; want {}", b, err)
	}
}
