package main

import (
	"fmt"
	"strconv"
)

// atLeast is the -at-least flag of -failover: a lower bound of the service's new floor
// that its own token source may have forgotten (red-team rt59c F2) — the guarded
// database's highest token (fencedsql-schema -max-token) and the last lock-service
// switch's recorded answer. It may be given more than once; the highest counts.
type atLeast struct {
	n   uint64
	set bool
}

// String implements flag.Value.
func (a *atLeast) String() string {
	if a == nil || !a.set {
		return ""
	}
	return strconv.FormatUint(a.n, 10)
}

// Set implements flag.Value: a decimal token, kept when higher than the ones before.
func (a *atLeast) Set(v string) error {
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return fmt.Errorf("%q is not a token (a decimal number)", v)
	}
	a.n, a.set = max(a.n, n), true
	return nil
}
