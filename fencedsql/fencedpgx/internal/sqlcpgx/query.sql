-- sqlc queries for fencedpgx/internal/sqlcpgx (engine: postgresql, sql_package: pgx/v5).
-- The Go code beside this file is hand-written in the exact shape sqlc v1.30 generates
-- for them; sqlc itself is not run by the build.

-- name: CreateAccount :exec
INSERT INTO accounts (id, owner, balance) VALUES ($1, $2, $3);

-- name: GetAccount :one
SELECT id, owner, balance, fence_token, version FROM accounts WHERE id = $1;

-- name: GetAccountForUpdate :one
SELECT id, owner, balance, fence_token, version FROM accounts WHERE id = $1 FOR UPDATE;

-- name: ListAccounts :many
SELECT id, owner, balance, fence_token, version FROM accounts ORDER BY id;

-- name: AddBalance :execrows
UPDATE accounts SET balance = balance + $1 WHERE id = $2;

-- name: UpdateBalanceReturning :one
UPDATE accounts SET balance = $1 WHERE id = $2 RETURNING id, owner, balance, fence_token, version;

-- name: DeleteAccount :exec
DELETE FROM accounts WHERE id = $1;

-- name: UpsertAccount :exec
INSERT INTO accounts (id, owner, balance) VALUES ($1, $2, $3) ON CONFLICT (id) DO UPDATE SET owner = EXCLUDED.owner, balance = EXCLUDED.balance;

-- name: AddBalanceBatch :batchexec
UPDATE accounts SET balance = balance + $1 WHERE id = $2;

-- name: CopyAuditLog :copyfrom
INSERT INTO audit_log (account_id, note) VALUES ($1, $2);

-- name: CopyAccounts :copyfrom
INSERT INTO accounts (id, owner, balance) VALUES ($1, $2, $3);
