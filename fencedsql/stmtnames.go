package fencedsql

import (
	"context"
	"database/sql/driver"
)

// A prepared statement follows its connection's name resolution (docs/design.md G13,
// "Prepared statements across a change of name resolution"; red-team rt56b F1, F2).
//
// An application's prepared statement (db.Prepare, Conn.PrepareContext, tx.Stmt)
// outlives the name resolution it was prepared under: a USE (MariaDB/MySQL), a SET
// search_path (PostgreSQL), a multi-statement text or a routine call the planner
// flags, Raw, a pool hook on reuse or the rollback that reverts a SET may move it —
// every path that re-arms the connection's name checks (conn.rearmNames), which moves
// the connection's names epoch on. MariaDB keeps a server-side prepared statement on
// the database it was prepared in, while every verdict an execution relies on (the
// lazy checks, the guard and trigger verdicts that choose a form: conflictForm, the
// one-statement DELETE and claim, the view check of a locking read) is asked about the
// table the name resolves to now, and the forms prepared lazily (Stamped, the
// one-statement and keyed forms, the versioned plan) are prepared there too. A form
// prepared before the move would run on another table than the one judged: the no-op
// upsert chosen because the new database's table has no BEFORE UPDATE trigger ran on
// the old one's, firing a user's trigger for a stale holder or the guard's refusal of a
// fresh one. So, before an execution, a statement prepared under an earlier epoch
// closes its wrapped statements and prepares each form again, on first use, under the
// resolution in force: every form and every verdict then concern the same table — the
// one an unprepared statement on the connection writes. A connection whose resolution
// never moved pays one comparison.

// followNames drops s's wrapped statements when the connection's name resolution may
// have moved since they were prepared (see above): the forms the execution sends are
// prepared again on first use (stmt.prepared, prepareAll), after the checks that choose
// them ran under the resolution in force. Closing them is best effort (a statement of a
// broken connection: the next prepare reports it).
func (s *stmt) followNames() {
	if s.epoch == s.c.namesEpoch {
		return
	}
	_ = s.Close()
	s.epoch = s.c.namesEpoch
}

// followNames prepares s's statement again when the connection's name resolution may
// have moved since it was prepared and its execution relies on a verdict about a name
// (a locking read judged by the view check, conn.lockThrough): the verdict is asked of
// the relation the name resolves to now, so the statement must read that one too. A
// pass-through statement that relies on no verdict keeps the driver's statement and the
// server's semantics. A failed prepare is mapped as the statement's errors are, and the
// old statement is kept for Close.
func (s *passStmt) followNames(ctx context.Context) error {
	if s.epoch == s.c.namesEpoch || s.p == nil || len(s.p.LockThrough) == 0 {
		return nil
	}
	st, err := s.c.rawPrepare(ctx, s.text)
	if err != nil {
		return s.c.core.mapPassErr(s.p, err)
	}
	_ = s.Stmt.Close() // best effort, as stmt.followNames
	s.Stmt, s.epoch = st, s.c.namesEpoch
	s.checker, _ = st.(driver.NamedValueChecker)
	return nil
}
