package fencedsql

import "github.com/fencedsql/fencedsql/internal/secret"

// maskedError is a plain driver's error whose text is masked of the DSN's password
// (secret.Redact): a driver's parse or connect error may quote the DSN, and its own
// redaction may miss a spelling it reads (pgx's misses "password = p", red-team rt31d
// F8). It wraps the driver's error (errors.Is, errors.As see it); only Error is masked.
type maskedError struct {
	err      error
	password string
}

func (e *maskedError) Error() string { return secret.Redact(e.err.Error(), e.password) }
func (e *maskedError) Unwrap() error { return e.err }

// maskPassword returns err masked of password (the DSN's, secret.Password): err itself
// when either is empty or its text does not change under the mask, so that an error
// which quotes no password keeps its identity (a caller comparing it with ==, as
// drivers' own tests do, still finds it).
func maskPassword(err error, password string) error {
	if err == nil || password == "" || secret.Redact(err.Error(), password) == err.Error() {
		return err
	}
	return &maskedError{err: err, password: password}
}
