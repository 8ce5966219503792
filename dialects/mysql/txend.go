package mysql

import "github.com/fencedsql/fencedsql/fencedsql/dialect"

// EndTx spells out what completion_type would otherwise decide: no new transaction
// after it, and the session kept (a stored function or trigger may set completion_type
// after the session check passed; red-team rt10f F3).
func (dialectImpl) EndTx(commit bool) string {
	if commit {
		return "COMMIT AND NO CHAIN NO RELEASE"
	}
	return "ROLLBACK AND NO CHAIN NO RELEASE"
}

var _ dialect.TxEnder = dialectImpl{}
