-- sqlc queries for internal/ormtest/sqlcsqlite (engine: sqlite); the Go code there is hand-written in sqlc's shape.
-- SQLite has no SELECT ... FOR UPDATE: GetAccountForUpdate is a plain read there.
-- name: CreateAccount :exec
INSERT INTO accounts (id, owner, balance) VALUES (?, ?, ?);

-- name: GetAccountForUpdate :one
SELECT id, owner, balance, deleted_at, fence_token, version FROM accounts WHERE id = ?;

-- name: UpdateBalance :execrows
UPDATE accounts SET balance = ? WHERE id = ?;

-- name: AddBalance :exec
UPDATE accounts SET balance = balance + ? WHERE id = ?;

-- name: UpdateAccountRow :exec
UPDATE accounts SET owner = ?, balance = ?, fence_token = ?, version = ? WHERE id = ?;

-- name: SoftDeleteAccount :exec
UPDATE accounts SET deleted_at = CURRENT_TIMESTAMP WHERE id = ? AND deleted_at IS NULL;

-- name: DeleteAccount :exec
DELETE FROM accounts WHERE id = ?;

-- name: UpsertAccount :exec
INSERT INTO accounts (id, owner, balance) VALUES (?, ?, ?) ON CONFLICT (id) DO UPDATE SET owner = excluded.owner, balance = excluded.balance;

-- name: UpdateBalanceReturning :one
UPDATE accounts SET balance = ? WHERE id = ? RETURNING id, owner, balance, deleted_at, fence_token, version;
