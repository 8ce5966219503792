package plan

// Dynamic SQL inside a transaction. WithDynamicSQL lets through statements whose SQL
// the wrapper cannot read (CALL, EXECUTE [IMMEDIATE], PREPARE, DO, a MariaDB compound
// statement BEGIN NOT ATOMIC … END, a function that runs SQL text). On MySQL/MariaDB
// such a statement can end the open transaction and still succeed: a procedure or
// compound statement that commits, EXECUTE IMMEDIATE of COMMIT or of DDL (an implicit
// commit), a procedure whose handler swallows the deadlock error InnoDB rolled the
// whole transaction back for. No text shows it, so the planner marks the plan
// (Plan.Dynamic) and the wrapper asks the server, after such a statement succeeds
// inside a transaction, whether the transaction is still open
// (dialect.TxOpenQuerier). PostgreSQL refuses COMMIT inside a DO block or procedure
// called in a transaction block, and a plpgsql EXCEPTION block is a subtransaction;
// its PREPARE TRANSACTION, which does end the session's transaction, is refused as
// transaction control (route.go).

// markDynamic returns pl marked Dynamic when the statement (or one of its statements,
// or a reading of its executable comments) runs dynamic SQL that WithDynamicSQL
// allowed; pl unchanged otherwise. Shared plans are copied, never changed.
func (p *parser) markDynamic(pl *Plan) *Plan {
	if !p.runsDynamic || pl == nil || pl.Dynamic {
		return pl
	}
	cp := *pl
	cp.Dynamic = true
	return &cp
}
