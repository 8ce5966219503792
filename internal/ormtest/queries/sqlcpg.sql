-- sqlc queries for internal/ormtest/sqlcpg (engine: postgresql); the Go code there is hand-written in sqlc's shape.
-- name: CreateAccount :exec
INSERT INTO accounts (id, owner, balance) VALUES ($1, $2, $3);

-- name: GetAccountForUpdate :one
SELECT id, owner, balance, deleted_at, fence_token, version FROM accounts WHERE id = $1 FOR UPDATE;

-- name: UpdateBalance :execrows
UPDATE accounts SET balance = $1 WHERE id = $2;

-- name: AddBalance :exec
UPDATE accounts SET balance = balance + $1 WHERE id = $2;

-- name: UpdateAccountRow :exec
UPDATE accounts SET owner = $1, balance = $2, fence_token = $3, version = $4 WHERE id = $5;

-- name: SoftDeleteAccount :exec
UPDATE accounts SET deleted_at = CURRENT_TIMESTAMP WHERE id = $1 AND deleted_at IS NULL;

-- name: DeleteAccount :exec
DELETE FROM accounts WHERE id = $1;

-- name: UpsertAccount :exec
INSERT INTO accounts (id, owner, balance) VALUES ($1, $2, $3) ON CONFLICT (id) DO UPDATE SET owner = EXCLUDED.owner, balance = EXCLUDED.balance;

-- name: UpdateBalanceReturning :one
UPDATE accounts SET balance = $1 WHERE id = $2 RETURNING id, owner, balance, deleted_at, fence_token, version;
