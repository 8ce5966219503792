package sqllock_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// A lease-table name New refuses (WithTable) is refused by every entry point with the
// same typed error, wrapping lockclient.ErrInvalidConfig: New, DDL, DropDDL and
// CreateTable (which sends nothing; red-team rt43e F2: the last three returned it
// untyped). So is an unknown dialect in DDL, DropDDL and CreateTable.
func TestBadTableNameIsInvalidConfigEverywhere(t *testing.T) {
	db, err := sql.Open("pgx", "postgres://localhost/x")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	bad := []string{`tn"x`, "tn`x", "tn;x", "a.b.c", "1tn", "tn x", "", ".tn", "tn.", strings.Repeat("n", 49)}
	for _, name := range bad {
		for _, d := range []sqllock.Dialect{sqllock.Postgres, sqllock.MySQL} {
			if name != "" { // "" means DefaultTable in DDL, DropDDL and CreateTable
				if _, err := sqllock.DDL(d, name); !errors.Is(err, lockclient.ErrInvalidConfig) {
					t.Errorf("DDL(%v, %q) = %v, want an error wrapping lockclient.ErrInvalidConfig", d, name, err)
				}
				if _, err := sqllock.DropDDL(d, name); !errors.Is(err, lockclient.ErrInvalidConfig) {
					t.Errorf("DropDDL(%v, %q) = %v, want an error wrapping lockclient.ErrInvalidConfig", d, name, err)
				}
				if err := sqllock.CreateTable(context.Background(), nil, d, name); !errors.Is(err, lockclient.ErrInvalidConfig) {
					t.Errorf("CreateTable(%v, %q) = %v, want an error wrapping lockclient.ErrInvalidConfig", d, name, err)
				}
			}
			if _, err := sqllock.New(db, sqllock.WithDialect(d), sqllock.WithTable(name)); !errors.Is(err, lockclient.ErrInvalidConfig) {
				t.Errorf("New(WithDialect(%v), WithTable(%q)) = %v, want an error wrapping lockclient.ErrInvalidConfig", d, name, err)
			}
		}
	}
	unknown := sqllock.Dialect(99)
	if _, err := sqllock.DDL(unknown, ""); !errors.Is(err, lockclient.ErrInvalidConfig) {
		t.Errorf("DDL(unknown dialect) = %v, want an error wrapping lockclient.ErrInvalidConfig", err)
	}
	if _, err := sqllock.DropDDL(unknown, ""); !errors.Is(err, lockclient.ErrInvalidConfig) {
		t.Errorf("DropDDL(unknown dialect) = %v, want an error wrapping lockclient.ErrInvalidConfig", err)
	}
	if err := sqllock.CreateTable(context.Background(), nil, unknown, ""); !errors.Is(err, lockclient.ErrInvalidConfig) {
		t.Errorf("CreateTable(unknown dialect) = %v, want an error wrapping lockclient.ErrInvalidConfig", err)
	}
}
