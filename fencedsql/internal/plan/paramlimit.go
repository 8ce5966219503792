package plan

import (
	"strconv"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// Bind parameters one statement may carry, by dialect. ORMs size their INSERT batches
// to these, so a batch the raw driver accepts must not fail only because the wrapper
// adds the fencing token.
const (
	// pgMaxParams: the extended protocol's Bind message counts parameters in 16 bits;
	// pgx refuses more before sending.
	pgMaxParams = 65535
	// mysqlMaxParams: a MySQL or MariaDB prepared statement (error 1390, "Prepared
	// statement contains too many placeholders").
	mysqlMaxParams = 65535
	// sqliteMaxParams: SQLITE_MAX_VARIABLE_NUMBER, 32766 by default since SQLite 3.32
	// (as modernc.org/sqlite is built; also the largest ?NNN).
	sqliteMaxParams = 32766
)

// paramLimit returns the most bind parameters a statement may carry in the dialect
// whose syntax is syn, and the dialect's name for messages.
func paramLimit(syn sqllex.Syntax) (int, string) {
	switch syn {
	case sqllex.Postgres:
		return pgMaxParams, "PostgreSQL"
	case sqllex.SQLite:
		return sqliteMaxParams, "SQLite"
	}
	return mysqlMaxParams, "MySQL/MariaDB"
}

// finishInsert finishes an INSERT plan and fits it into the dialect's parameter limit.
//
// A plan within the limit is returned as built (one comparison: the common case costs
// nothing more). So is a statement whose own placeholders already exceed the limit:
// the driver refuses it as it would the caller's text. Otherwise the limit is passed
// only because of the wrapper's parameters, and
//   - on SQLite, the statement is rewritten with numbered ?NNN placeholders so that
//     the token (and version) is bound once, however many rows use it;
//   - where that does not fit either, or cannot be done (PostgreSQL already binds the
//     token once; MySQL's positional ? cannot be reused, and a user variable would be
//     read and set by the same statement, in an order the server leaves undefined),
//     the statement is refused before anything is sent, with a *Refusal naming the limit and the most rows of the same shape that fit.
func (p *parser) finishInsert(b *builder, g *Table) (*Plan, error) {
	pl := b.finish(KindInsert, g)
	limit, _ := paramLimit(p.rw.syn)
	if len(pl.Args) <= limit || b.nUser > limit {
		return pl, nil
	}
	return p.overLimit(b, pl, g, limit)
}

// overLimit handles an INSERT plan whose parameters exceed limit only because of the
// wrapper's (see finishInsert).
func (p *parser) overLimit(b *builder, pl *Plan, g *Table, limit int) (*Plan, error) {
	perRow := 0 // the wrapper's parameters in each row
	if !p.rw.numbered {
		perRow = 1
	}
	if p.rw.syn == sqllex.SQLite {
		if sp, ok := shareTokens(pl, p.rw.syn); ok {
			if len(sp.Args) <= limit {
				return sp, nil
			}
			pl, perRow = sp, 0
		}
	}
	fixed := len(pl.Args) - b.inRows - b.rows*perRow // outside the rows, or shared by them
	fit := 0
	if w := b.maxRow + perRow; w > 0 && fixed < limit {
		fit = (limit - fixed) / w
	}
	_, name := paramLimit(p.rw.syn)
	what := "rows of this shape fit"
	if fit == 1 {
		what = "row of this shape fits"
	}
	return nil, unsupported(g.String(),
		"an INSERT of %d rows binds %d parameters with the fencing token (%d of the caller's), over %s's limit of %d per statement; at most %d %s (split the batch)",
		b.rows, len(pl.Args), b.nUser, name, limit, fit, what)
}

// shareTokens rewrites a plan with positional ? placeholders into one with numbered
// ?NNN placeholders (SQLite), each of the caller's arguments numbered in order, then
// the token and the version, so that the token and the version are bound once however
// often the statement uses them. ok is false, and the plan must not be used, when the
// plan's text does not lex back to exactly its placeholders, all positional.
func shareTokens(pl *Plan, syn sqllex.Syntax) (sp *Plan, ok bool) {
	toks, err := sqllex.Lex(pl.SQL, syn)
	if err != nil {
		return nil, false
	}
	used := make([]bool, pl.NUser)
	tok, ver := false, false
	for _, r := range pl.Args {
		switch {
		case r == ArgToken:
			tok = true
		case r == ArgVersion:
			ver = true
		case r >= 0 && int(r) < len(used):
			used[r] = true
		default:
			return nil, false
		}
	}
	num := make([]int, pl.NUser) // caller's argument → its ?NNN
	args := make([]ArgRef, 0, pl.NUser+2)
	for i, u := range used {
		if u {
			args = append(args, ArgRef(i))
			num[i] = len(args)
		}
	}
	tokNum, verNum := 0, 0
	if tok {
		args = append(args, ArgToken)
		tokNum = len(args)
	}
	if ver {
		args = append(args, ArgVersion)
		verNum = len(args)
	}
	var sb strings.Builder
	sb.Grow(len(pl.SQL) + 6*len(pl.Args))
	last, i := 0, 0
	for _, t := range toks {
		if t.Kind != sqllex.KindParam {
			continue
		}
		if i >= len(pl.Args) || pl.SQL[t.Start:t.End] != "?" {
			return nil, false
		}
		n := tokNum
		switch r := pl.Args[i]; r {
		case ArgToken:
		case ArgVersion:
			n = verNum
		default:
			n = num[r]
		}
		sb.WriteString(pl.SQL[last:t.Start])
		sb.WriteByte('?')
		sb.WriteString(strconv.Itoa(n))
		last = t.End
		i++
	}
	if i != len(pl.Args) {
		return nil, false
	}
	sb.WriteString(pl.SQL[last:])
	c := *pl
	c.SQL, c.Args = sb.String(), args
	return &c, true
}

// checkParamLimit refuses, before anything is sent, a plan other than an INSERT (which
// finishInsert fits or refuses) whose statements bind more parameters than the dialect
// allows only because of the wrapper's token and version: an UPDATE, a DELETE (its
// fencing UPDATE) or a claimed locking read with a long IN list. A statement whose own
// placeholders exceed the limit is sent as written: the driver refuses it as it would
// the caller's text. The check is a length comparison per statement of the plan.
func checkParamLimit(pl *Plan, syn sqllex.Syntax) error {
	if pl.Kind == KindPass || pl.Kind == KindInsert {
		return nil
	}
	limit, name := paramLimit(syn)
	if pl.NUser > limit {
		return nil
	}
	table := ""
	if pl.Guard != nil {
		table = pl.Guard.String()
	}
	for s := pl; s != nil; s = s.Pre {
		if len(s.Args) > limit {
			return unsupported(table,
				"the fenced statement binds %d parameters with the fencing token (%d of the caller's), over %s's limit of %d per statement; at most %d of the caller's fit (split the statement)",
				len(s.Args), pl.NUser, name, limit, max(0, pl.NUser-(len(s.Args)-limit)))
		}
	}
	return nil
}
