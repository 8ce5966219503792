package plan

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

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
// transaction control (route.go). Where the text is there to read — EXECUTE IMMEDIATE
// of a string literal — it is judged as if sent alone: transaction control refused, a
// statement that commits implicitly refused inside a transaction (immediateTx).

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

// immediateTx judges the statement text of a MySQL/MariaDB EXECUTE IMMEDIATE whose
// sig[first] is EXECUTE, when it is written as a string literal: transaction control
// there (EXECUTE IMMEDIATE 'COMMIT') is refused as it is as text, and a statement that
// commits implicitly (EXECUTE IMMEDIATE 'CREATE TABLE …') marks the plan as it would
// alone (refused inside a transaction). A text built at run time (CONCAT, a variable)
// is left to the check after the statement (Plan.Dynamic).
func (p *parser) immediateTx(first int) error {
	if !p.rw.syn.ExecComments || !p.kw(first+1, "IMMEDIATE") || !p.stringLike(first+2) {
		return nil
	}
	body := stringBody(p.literalText(first + 2))
	toks, err := sqllex.Lex(body, p.rw.syn)
	if err != nil {
		return nil
	}
	q := &parser{rw: p.rw, src: body, all: toks, sig: significant(body, toks), depth: p.depth + 1, inBody: true}
	if len(q.sig) == 0 || q.sig[0].Kind != sqllex.KindWord {
		return nil
	}
	head := strings.ToUpper(q.text(q.sig[0]))
	switch head {
	case "COMMIT", "BEGIN", "START", "XA", "END":
		return p.textTx("EXECUTE IMMEDIATE '" + head + " …'")
	case "ROLLBACK":
		if !q.kwIn(1, "TO") && !(q.kwIn(1, "WORK", "TRANSACTION") && q.kw(2, "TO")) {
			return p.textTx("EXECUTE IMMEDIATE 'ROLLBACK'")
		}
	}
	if q.commitsImplicitly(head, 0) {
		p.implicitCommit = true
	}
	return nil
}

// compoundTx marks a MariaDB compound statement (BEGIN NOT ATOMIC … END at sig[first])
// as committing the open transaction (Plan.ImplicitCommit: refused inside a
// transaction) when one of its statements, as far as the text shows, ends or commits
// it: COMMIT, ROLLBACK other than ROLLBACK TO, START TRANSACTION, XA, or a statement
// that commits implicitly. A statement is what follows ';', a block's BEGIN or a
// branch's THEN, ELSE, DO, LOOP or REPEAT; one the scan misses (a handler's action
// after FOR SQLEXCEPTION) is left to the check after the statement (Plan.Dynamic).
func (p *parser) compoundTx(first int) {
	for i := first + 3; i < len(p.sig); i++ {
		if !(p.punct(i-1, ";") || p.kwIn(i-1, "BEGIN", "THEN", "ELSE", "DO", "LOOP", "REPEAT") || i == first+3) ||
			p.sig[i].Kind != sqllex.KindWord {
			continue
		}
		head := strings.ToUpper(p.text(p.sig[i]))
		switch head {
		case "COMMIT", "XA":
			p.implicitCommit = true
		case "START":
			p.implicitCommit = p.implicitCommit || p.kw(i+1, "TRANSACTION")
		case "ROLLBACK":
			p.implicitCommit = p.implicitCommit || !(p.kw(i+1, "TO") || p.kwIn(i+1, "WORK", "TRANSACTION") && p.kw(i+2, "TO"))
		case "BEGIN", "END", "IF", "ELSE", "THEN", "LOOP", "REPEAT", "WHILE", "CASE", "DECLARE", "LEAVE", "ITERATE":
		default:
			p.implicitCommit = p.implicitCommit || p.commitsImplicitly(head, i)
		}
	}
}
