package schema

import "github.com/fencedsql/fencedsql/fencedsql/dialect"

// complete is the first step of every entry point of this package that takes a
// dialect (op names it): no dialect, or one that hides optional capabilities of the
// dialect it is built on (dialect.CompleteRegistered: the check the wrapper runs at Open, with
// the same name rule — a value bearing a registered stock dialect's Name is held to its
// capabilities, red-team rt46c F1), is
// refused with a *ConfigError before anything is sent. Each capability is found by
// type assertion and one missing counts as "this database has no such thing": a
// stock dialect embedded as its dialect.Dialect interface made MaxToken skip the
// tombstones and the token floor and answer too low with a nil error (a lost lock
// service reseeded from it hands out again tokens already granted), Check report no
// side door, and Recorded and Unlisted answer "none" (red-team rt45c F2–F4).
func complete(op string, d dialect.Dialect) error {
	if d == nil {
		return configErr("%s: no dialect", op)
	}
	if err := dialect.CompleteRegistered(d); err != nil {
		return &ConfigError{Msg: op + ": " + err.Error(), Err: err}
	}
	return nil
}
