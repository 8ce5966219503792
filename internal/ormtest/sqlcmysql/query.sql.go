// Hand-written in the shape sqlc v1.30 generates (not generated: see db.go).

package sqlcmysql

import (
	"context"
	"database/sql"
)

const createAccount = `-- name: CreateAccount :exec
INSERT INTO accounts (id, owner, balance) VALUES (?, ?, ?)
`

func (q *Queries) CreateAccount(ctx context.Context, id int64, owner sql.NullString, balance sql.NullInt64) error {
	_, err := q.db.ExecContext(ctx, createAccount, id, owner, balance)
	return err
}

const getAccountForUpdate = `-- name: GetAccountForUpdate :one
SELECT id, owner, balance, deleted_at, fence_token, version FROM accounts WHERE id = ? FOR UPDATE
`

func (q *Queries) GetAccountForUpdate(ctx context.Context, id int64) (Account, error) {
	row := q.db.QueryRowContext(ctx, getAccountForUpdate, id)
	var i Account
	err := row.Scan(
		&i.ID,
		&i.Owner,
		&i.Balance,
		&i.DeletedAt,
		&i.FenceToken,
		&i.Version,
	)
	return i, err
}

const updateBalance = `-- name: UpdateBalance :execrows
UPDATE accounts SET balance = ? WHERE id = ?
`

func (q *Queries) UpdateBalance(ctx context.Context, balance sql.NullInt64, id int64) (int64, error) {
	result, err := q.db.ExecContext(ctx, updateBalance, balance, id)
	if err != nil {
		return 0, err
	}
	return result.RowsAffected()
}

const addBalance = `-- name: AddBalance :exec
UPDATE accounts SET balance = balance + ? WHERE id = ?
`

func (q *Queries) AddBalance(ctx context.Context, balance sql.NullInt64, id int64) error {
	_, err := q.db.ExecContext(ctx, addBalance, balance, id)
	return err
}

const updateAccountRow = `-- name: UpdateAccountRow :exec
UPDATE accounts SET owner = ?, balance = ?, fence_token = ?, version = ? WHERE id = ?
`

func (q *Queries) UpdateAccountRow(ctx context.Context, owner sql.NullString, balance sql.NullInt64, fenceToken int64, version int64, id int64) error {
	_, err := q.db.ExecContext(ctx, updateAccountRow, owner, balance, fenceToken, version, id)
	return err
}

const softDeleteAccount = `-- name: SoftDeleteAccount :exec
UPDATE accounts SET deleted_at = CURRENT_TIMESTAMP WHERE id = ? AND deleted_at IS NULL
`

func (q *Queries) SoftDeleteAccount(ctx context.Context, id int64) error {
	_, err := q.db.ExecContext(ctx, softDeleteAccount, id)
	return err
}

const deleteAccount = `-- name: DeleteAccount :exec
DELETE FROM accounts WHERE id = ?
`

func (q *Queries) DeleteAccount(ctx context.Context, id int64) error {
	_, err := q.db.ExecContext(ctx, deleteAccount, id)
	return err
}

const upsertAccount = `-- name: UpsertAccount :exec
INSERT INTO accounts (id, owner, balance) VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE owner = VALUES(owner), balance = VALUES(balance)
`

func (q *Queries) UpsertAccount(ctx context.Context, id int64, owner sql.NullString, balance sql.NullInt64) error {
	_, err := q.db.ExecContext(ctx, upsertAccount, id, owner, balance)
	return err
}
