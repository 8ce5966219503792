package fencedsql

import (
	"context"
	"math"

	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// The token a statement carries is decided in one place, statementToken: whether the
// statement is under a binding at all (bound), and which token that binding gives it.
// Every judgement reads it — whether a locking read is claimed (hasToken), the token a
// guarded write or a claim carries and its refusal (tokenFor), the token recorded for
// metrics and spans (tokenOf) — so that they cannot disagree (red-team rt31c F1: a
// claim ran unclaimed, as an ordinary locking read, where a write was refused).
//
// A statement is bound when
//   - its transaction was begun under a binding (WithLease, WithLeases, WithToken; one
//     that carries no usable token too), or carries a token a joining lease gave it:
//     the transaction's token, whatever the statement's own context says (a statement
//     binding another token was judged by otherBinding). A transaction begun under a
//     binding with no usable token (a nil lease, a lease never granted, token 0) keeps
//     none: every guarded write and claim in it is refused with ErrNoToken;
//   - else its own context carries a binding: that binding's token, and where it
//     carries leases, at least the largest token of the leases joined to its
//     transaction (txState.joined): the transaction holds them all and checks them at
//     Commit, and a smaller token would be refused on rows the transaction itself
//     wrote under the larger one (red-team rt33a F3). A bare token (WithToken, no
//     leases) and token 0 stay as they are;
//   - else its transaction (begun without a binding) was joined by a statement's
//     lease: it runs under that lock, and a statement without a binding of its own
//     has no token for it (0).
//
// Unbound, a locking read runs as an ordinary locking read and a guarded write is
// refused. Bound, both carry the token, and a token that is no fencing token (0, or
// above the signed 64-bit range) refuses both with ErrNoToken, nothing sent.
func (c *conn) statementToken(ctx context.Context) (tok uint64, bound bool) {
	st := c.tx
	if st != nil && (st.token != 0 || st.bound) {
		return st.token, true
	}
	if b, ok := bindingFrom(ctx); ok {
		if st != nil && b.token != 0 && len(b.leases) > 0 {
			return max(b.token, st.joined), true
		}
		return b.token, true
	}
	if st != nil && len(st.leases) > 0 {
		return 0, true
	}
	return 0, false
}

// hasToken reports whether a statement with ctx on this connection is bound
// (statementToken): its locking reads are claims, judged by tokenFor.
func (c *conn) hasToken(ctx context.Context) bool {
	_, bound := c.statementToken(ctx)
	return bound
}

// tokenOf returns the token a statement with ctx carries on this connection, unchecked
// (0 for none): for the record only, tokenFor decides.
func (c *conn) tokenOf(ctx context.Context) uint64 {
	tok, _ := c.statementToken(ctx)
	return tok
}

// tokenFor returns the token a guarded write, or a claim, on g carries
// (statementToken), or the *NoTokenError that refuses it (logged and counted).
func (c *conn) tokenFor(ctx context.Context, g *plan.Table) (uint64, error) {
	tok, bound := c.statementToken(ctx)
	var reason string
	switch {
	case !bound:
		reason = "no fencing token in the context or transaction (use fencedsql.WithLease or fencedsql.WithToken)"
	case tok == 0:
		reason = "token 0 (a nil lease, a lease never granted, or a nil one among WithLeases' leases) is not a fencing token"
	case tok > math.MaxInt64:
		reason = "token exceeds the largest BIGINT"
	default:
		return tok, nil
	}
	c.core.cfg.logger.Warn("fencedsql: guarded write without a token refused", "table", g.String())
	c.core.metrics.count(c.core.metrics.noToken, g)
	return 0, &NoTokenError{Table: g.String(), Reason: reason}
}
