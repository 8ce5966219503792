package dialect

import (
	"slices"
	"sync"
)

// registered is the dialects Register was given (the stock dialects register theirs
// through fencedsql.Register when their package is imported), once each. It is the
// process's list, as database/sql's list of drivers is: the name rule of
// CompleteRegistered and the wrapper's reading of errors that carry no SQLSTATE method
// ask it.
var registered struct {
	sync.Mutex
	dialects []Dialect
}

// Register adds d to the registered dialects (nothing when d is nil or registered
// already: the same value, ==). fencedsql.Register calls it with the dialect of each
// driver it registers.
func Register(d Dialect) {
	if d == nil {
		return
	}
	registered.Lock()
	defer registered.Unlock()
	if !slices.ContainsFunc(registered.dialects, func(r Dialect) bool { return sameValue(r, d) }) {
		registered.dialects = append(registered.dialects, d)
	}
}

// Registered returns the registered dialects.
func Registered() []Dialect {
	registered.Lock()
	defer registered.Unlock()
	return slices.Clip(registered.dialects)
}

// CompleteRegistered is the completeness check every place that takes a dialect runs
// (fencedsql's Open and WithDialect, and every entry point of package schema):
// Complete with the registered dialects as the name rule's references, so a value
// bearing a stock dialect's Name without being of its type is held to that dialect's
// capabilities wherever it is used (red-team rt46c F1: package schema ran Complete
// without them, and a dialect bearing the stock Name whose stock base was out of the
// walk's sight was held to nothing there while Open refused it).
func CompleteRegistered(d Dialect) error {
	return Complete(d, Registered()...)
}

// sameValue reports whether a and b are one dialect value (==; a value of a type that
// cannot be compared is kept apart).
func sameValue(a, b Dialect) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}
