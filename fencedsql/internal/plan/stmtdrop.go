package plan

import "github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"

// DropsStatements reports whether a statement sent as written may drop the session's
// prepared statements, which the driver may still send by name — pgx keeps a
// server-side prepared statement per text it ran, the wrapper's own check queries
// among them (docs/design.md G13, red-team rt57a F2): on PostgreSQL a text holding the
// word DISCARD (DISCARD ALL; DISCARD PLANS, TEMP and SEQUENCES are flagged too, at the
// cost of preparing again) or DEALLOCATE (DEALLOCATE ALL, or of one statement, which
// may be one the driver cached). The rule is textual and errs on the side of flagging;
// other databases drop no driver's statement by SQL text (MySQL's DEALLOCATE PREPARE
// names only statements prepared by SQL PREPARE).
func (rw *Planner) DropsStatements(sql string) bool {
	return rw.syn == sqllex.Postgres && (ContainsWord(sql, "discard") || ContainsWord(sql, "deallocate"))
}
