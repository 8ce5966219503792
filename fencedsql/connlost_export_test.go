package fencedsql

// ConnLost and WithOutcome expose connLost, the wrapper's one lost-connection rule,
// and withOutcome, which follows it, to the tests of package fencedsql_test that judge
// them with the stock dialects (which import this package, so an internal test
// cannot).
var (
	ConnLost    = connLost
	WithOutcome = withOutcome
)
