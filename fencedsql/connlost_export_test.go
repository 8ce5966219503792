package fencedsql

// ConnLost, WithOutcome and CheckQueryErr expose connLost, the wrapper's one
// lost-connection rule, withOutcome, which follows it, and checkQueryErr, the error of
// a check query, to the tests of package fencedsql_test that judge
// them with the stock dialects (which import this package, so an internal test
// cannot).
var (
	ConnLost      = connLost
	WithOutcome   = withOutcome
	CheckQueryErr = checkQueryErr
)
