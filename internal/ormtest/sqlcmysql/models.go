// Hand-written in the shape sqlc v1.30 generates (not generated: see db.go).

package sqlcmysql

import (
	"database/sql"
)

type Account struct {
	ID         int64
	Owner      sql.NullString
	Balance    sql.NullInt64
	DeletedAt  sql.NullTime
	FenceToken int64
	Version    int64
}
