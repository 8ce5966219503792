package ormtest

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/ormtest/sqlcmysql"
	"github.com/fencedsql/fencedsql/internal/ormtest/sqlcpg"
	"github.com/fencedsql/fencedsql/internal/ormtest/sqlcsqlite"
)

// sqlcQueries is what the three sqlc-shaped packages have in common (A: their Account,
// Q: their *Queries).
type sqlcQueries[A, Q any] interface {
	CreateAccount(ctx context.Context, id int64, owner sql.NullString, balance sql.NullInt64) error
	GetAccountForUpdate(ctx context.Context, id int64) (A, error)
	UpdateBalance(ctx context.Context, balance sql.NullInt64, id int64) (int64, error)
	AddBalance(ctx context.Context, balance sql.NullInt64, id int64) error
	UpdateAccountRow(ctx context.Context, owner sql.NullString, balance sql.NullInt64, fenceToken, version, id int64) error
	SoftDeleteAccount(ctx context.Context, id int64) error
	DeleteAccount(ctx context.Context, id int64) error
	UpsertAccount(ctx context.Context, id int64, owner sql.NullString, balance sql.NullInt64) error
	WithTx(tx *sql.Tx) Q
}

func TestSqlc(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			e := setup(t, b)
			var s shapeSuite
			switch b.name {
			case "postgres":
				q := sqlcpg.New(e.db)
				s = sqlcSuite(e, q, func(ctx context.Context, bal sql.NullInt64, id int64) (int64, error) {
					a, err := q.UpdateBalanceReturning(ctx, bal, id)
					return a.FenceToken, err
				})
			case "mysql":
				s = sqlcSuite(e, sqlcmysql.New(e.db), nil)
			case "sqlite":
				q := sqlcsqlite.New(e.db)
				s = sqlcSuite(e, q, func(ctx context.Context, bal sql.NullInt64, id int64) (int64, error) {
					a, err := q.UpdateBalanceReturning(ctx, bal, id)
					return a.FenceToken, err
				})
			}
			runSuites(t, e, []shapeSuite{s})
		})
	}
}

// sqlcSuite: the queries decide which columns are written, so there is one "shape":
// "queries". UpdateAccountRow is the "maps the fencing columns" case (a full-row update
// that passes fence_token and version, with lies).
func sqlcSuite[A any, Q sqlcQueries[A, Q]](e *env, q Q, returning func(context.Context, sql.NullInt64, int64) (int64, error)) shapeSuite {
	bob := sql.NullString{String: "bob", Valid: true}
	n := func(v int64) sql.NullInt64 { return sql.NullInt64{Int64: v, Valid: true} }
	ops := []op{
		{name: "CreateAccount", inserts: true, check: wantBalance(777),
			run: func(ctx context.Context, id int64) error { return q.CreateAccount(ctx, id, bob, n(777)) }},
		{name: "UpdateBalance", existing: true, check: wantBalance(777),
			run: func(ctx context.Context, id int64) error {
				rows, err := q.UpdateBalance(ctx, n(777), id)
				if err == nil && rows != 1 {
					err = fmt.Errorf("UpdateBalance: %d rows affected, want 1", rows)
				}
				return err
			}},
		{name: "AddBalance", existing: true, check: wantIncrement(5),
			run: func(ctx context.Context, id int64) error { return q.AddBalance(ctx, n(5), id) }},
		{name: "UpdateAccountRow", existing: true, check: wantBalance(777),
			run: func(ctx context.Context, id int64) error {
				return q.UpdateAccountRow(ctx, bob, n(777), lieToken, lieVersion, id)
			}},
		{name: "SoftDeleteAccount", existing: true, check: wantSoftDeleted,
			run: func(ctx context.Context, id int64) error { return q.SoftDeleteAccount(ctx, id) }},
		{name: "DeleteAccount", existing: true, deletes: true,
			run: func(ctx context.Context, id int64) error { return q.DeleteAccount(ctx, id) }},
		{name: "UpsertAccount", existing: true, inserts: true, check: wantBalance(777),
			run: func(ctx context.Context, id int64) error { return q.UpsertAccount(ctx, id, bob, n(777)) }},
	}
	ret := op{name: "UpdateBalanceReturning", existing: true, check: wantBalance(777),
		skip: "MariaDB/MySQL has no UPDATE … RETURNING"}
	if returning != nil {
		ret.skip = ""
		ret.run = func(ctx context.Context, id int64) error {
			tok, err := returning(ctx, n(777), id)
			if want, _ := fencedsql.TokenFrom(ctx); err == nil && tok != int64(want) {
				err = fmt.Errorf("RETURNING gave fence_token %d, want %d", tok, want)
			}
			return err
		}
	}
	ops = append(ops, ret)
	return shapeSuite{
		shape: "queries",
		ops:   ops,
		forUpdate: func(ctx context.Context, id int64, save bool) error {
			tx, err := e.db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer tx.Rollback()
			qtx := q.WithTx(tx)
			if _, err := qtx.GetAccountForUpdate(ctx, id); err != nil {
				return err
			}
			if save {
				if _, err := qtx.UpdateBalance(ctx, n(888), id); err != nil {
					return err
				}
			}
			return tx.Commit()
		},
		write: func(ctx context.Context, id int64) error {
			_, err := q.UpdateBalance(ctx, n(1), id)
			return err
		},
	}
}
