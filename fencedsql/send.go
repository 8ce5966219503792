package fencedsql

import (
	"context"
	"database/sql/driver"

	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// checkSend asks the dialect whether the wrapped driver reads a statement the wrapper
// is about to send as the server and the planner do (dialect.SendChecker; docs/design.md,
// "The drivers' own lexers"): the driver's own lexer, when it substitutes the arguments
// into the text (pgx's simple protocol, go-sql-driver/mysql's interpolateParams), and
// argument values it takes as options (pgx.NamedArgs, pgx.QueryExecMode). query and
// args are what is sent. Every statement of a plan that is not sent as the caller wrote
// it — every text that carries the token — is checked (the runners, and a pipelined
// batch's steps); so is a statement sent as written with arguments, for which the
// dialect answers ordinary text from a byte pre-filter. A refusal is an
// *UnsupportedError, and nothing is sent.
func (c *conn) checkSend(ctx context.Context, p *plan.Plan, query string, args []driver.NamedValue) error {
	k := c.core.sendCheck
	if k == nil {
		return nil
	}
	// A claimed read without a token runs as written: nothing of it is fenced.
	fenced := p.Kind != plan.KindPass && (p.Kind != plan.KindClaim || c.hasToken(ctx))
	if !fenced && len(args) == 0 {
		return nil
	}
	err := k.CheckSend(query, args, fenced, p.TextClass)
	if err == nil {
		return nil
	}
	return c.core.refused(&UnsupportedError{Table: p.Guard.String(), Reason: err.Error()})
}
