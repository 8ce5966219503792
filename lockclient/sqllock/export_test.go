package sqllock

// SetStatementHook makes f see every statement the backends send, with its arguments,
// until the returned function is called.
func SetStatementHook(f func(query string, args []any)) (restore func()) {
	statementHook.Store(&f)
	return func() { statementHook.Store(nil) }
}
