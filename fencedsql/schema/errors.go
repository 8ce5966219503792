package schema

import "fmt"

// ConfigError is a call this package refuses before it sends anything: no dialect, a
// dialect without the feature the call needs (no Floorer, no Registrar, no
// Tombstoner), or a table or column name that is not a plain identifier.
type ConfigError struct{ Msg string }

func (e *ConfigError) Error() string { return "fencedsql: " + e.Msg }

func configErr(format string, args ...any) error {
	return &ConfigError{Msg: fmt.Sprintf(format, args...)}
}
