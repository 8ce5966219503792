package fencedsql

import "encoding/json"

// The JSON forms of the wrapper's errors, for error translators that read an error's
// fields through encoding/json rather than its Go type. GORM's PostgreSQL dialector
// with TranslateError is one: an error that is not a *pgconn.PgError is marshalled,
// and its top-level "Code" (a SQLSTATE) and "Message" become
// fmt.Errorf("%w: %s", gorm.ErrDuplicatedKey, Message) and the like (red-team rt43d
// F1, F2). The translated error is GORM's: it wraps GORM's sentinel and the text, not
// the wrapper's error (errors.Is(err, ErrDuplicate) no longer holds on it).

// duplicateJSON is the JSON form of a DuplicateError: no Err, whose driver fields
// (PostgreSQL's Detail, MySQL's message) quote the duplicated values.
type duplicateJSON struct {
	Code       string `json:"Code,omitempty"`
	Message    string `json:"Message"`
	Table      string `json:"Table,omitempty"`
	Constraint string `json:"Constraint,omitempty"`
}

// MarshalJSON encodes the error as {"Code", "Message", "Table", "Constraint"}: Code
// the driver's SQLSTATE (left out when the driver reports none), Message the error's
// text (Error(): the driver's words rebuilt from the constraint's name, without the
// duplicated values). Through GORM's PostgreSQL dialector with TranslateError, a
// duplicate on any table then reads as on the plain driver, "duplicated key not
// allowed: ERROR: duplicate key value violates unique constraint …".
func (e *DuplicateError) MarshalJSON() ([]byte, error) {
	return json.Marshal(duplicateJSON{Code: e.Code, Message: e.Error(), Table: e.Table, Constraint: e.Constraint})
}

// MarshalJSON encodes the error as the error it adds an outcome to encodes (an error
// that cannot be encoded: {}), so that a translator reading the JSON sees the same
// fields with and without the outcome: a *DuplicateError, or a driver's error whose
// outcome the wrapper had to keep on it (a COMMIT's).
func (e *outcomeError) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(e.err)
	if err != nil || len(b) == 0 || b[0] != '{' {
		return []byte("{}"), nil
	}
	return b, nil
}
