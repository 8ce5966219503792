package sqllock

// SetStatementHook makes f see every statement the backends send, with its arguments,
// until the returned function is called.
func SetStatementHook(f func(query string, args []any)) (restore func()) {
	statementHook.Store(&f)
	return func() { statementHook.Store(nil) }
}

// DDLv1 returns the statements of schema version 1 (no waiter queue): the lease table
// as an earlier release created it.
func DDLv1(d Dialect, table string) []string {
	tn, err := parseTable(orDefault(table))
	if err != nil {
		panic(err)
	}
	return ddlV1(d, tn)
}

// AdvisoryClass is the first key of the table-wide advisory lock of table (PostgreSQL).
func AdvisoryClass(table string) int32 {
	tn, err := parseTable(orDefault(table))
	if err != nil {
		panic(err)
	}
	return advisoryClass(tn)
}

// AsOfNow is the prefix of every MySQL SELECT of the lease, counter and waiter tables
// (myAsOfNow).
const AsOfNow = myAsOfNow
