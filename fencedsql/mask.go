package fencedsql

import "github.com/fencedsql/fencedsql/internal/secret"

// maskedError is a plain driver's error whose text is masked of the DSN's passwords
// (secret.Redact): a driver's parse or connect error may quote the DSN, and its own
// redaction may miss a spelling it reads (pgx's misses "password = p", red-team rt31d
// F8). It wraps the driver's error (errors.Is, errors.As see it); only Error is masked.
type maskedError struct {
	err       error
	passwords []string
}

func (e *maskedError) Error() string { return secret.Redact(e.err.Error(), e.passwords...) }
func (e *maskedError) Unwrap() error { return e.err }

// maskPassword returns err masked of passwords (the DSN's, secret.Passwords): err
// itself when either is empty or its text does not change under the mask, so that an error
// which quotes no password keeps its identity (a caller comparing it with ==, as
// drivers' own tests do, still finds it).
func maskPassword(err error, passwords []string) error {
	if err == nil || len(passwords) == 0 || secret.Redact(err.Error(), passwords...) == err.Error() {
		return err
	}
	return &maskedError{err: err, passwords: passwords}
}
