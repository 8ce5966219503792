package ormtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/ormtest/ent"
	"github.com/fencedsql/fencedsql/internal/ormtest/ent/account"
)

// entDDL adds what the ent schema (./entschema) has beyond the suite's accounts table:
// a unique email on the guarded table and an unguarded customers table with one.
var entDDL = map[string][]string{
	"postgres": {
		`ALTER TABLE accounts ADD COLUMN email TEXT NULL CONSTRAINT accounts_email_key UNIQUE`,
		`CREATE TABLE customers (id BIGINT PRIMARY KEY, email TEXT NOT NULL CONSTRAINT customers_email_key UNIQUE)`,
	},
	"mysql": {
		`ALTER TABLE accounts ADD COLUMN email VARCHAR(100) NULL, ADD UNIQUE KEY accounts_email_key (email)`,
		`CREATE TABLE customers (id BIGINT PRIMARY KEY, email VARCHAR(100) NOT NULL, UNIQUE KEY customers_email_key (email)) ENGINE=InnoDB`,
	},
	"sqlite": {
		`ALTER TABLE accounts ADD COLUMN email TEXT NULL`, // SQLite cannot add a UNIQUE column
		`CREATE UNIQUE INDEX accounts_email_key ON accounts (email)`,
		`CREATE TABLE customers (id BIGINT PRIMARY KEY, email TEXT NOT NULL UNIQUE)`,
	},
}

var entDialect = map[string]string{"postgres": dialect.Postgres, "mysql": dialect.MySQL, "sqlite": dialect.SQLite}

// entSetup is setup plus entDDL, and an ent client on the fenced pool and one on the
// plain pool. ent's SQL is logged to the running subtest.
func entSetup(t *testing.T, b backend) (e *env, fenced, raw *ent.Client) {
	t.Helper()
	e = setup(t, b)
	for _, q := range entDDL[b.name] {
		if _, err := e.raw.ExecContext(testCtx(t), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	open := func(db *sql.DB) *ent.Client {
		return ent.NewClient(ent.Driver(entsql.OpenDB(entDialect[b.name], db)), ent.Debug(),
			ent.Log(func(args ...any) { e.logf("ent: %s", fmt.Sprint(args...)) }))
	}
	return e, open(e.db), open(e.raw)
}

// TestEnt runs the suite's cases with ent's generated client (create, bulk create,
// update one / where, add, delete one / where, a FOR UPDATE read in ent's transaction)
// on PostgreSQL, MariaDB and SQLite (modernc's driver under ent's sqlite3 dialect).
func TestEnt(t *testing.T) {
	for _, b := range backends {
		if entDialect[b.name] == "" {
			continue
		}
		t.Run(b.name, func(t *testing.T) {
			e, c, _ := entSetup(t, b)
			runSuites(t, e, []shapeSuite{entSuite(c)})
		})
	}
}

func entSuite(c *ent.Client) shapeSuite {
	return shapeSuite{
		shape: "rw",
		ops: []op{
			{name: "Create", inserts: true, check: wantBalance(777),
				run: func(ctx context.Context, id int64) error {
					return c.Account.Create().SetID(id).SetOwner("bob").SetBalance(777).Exec(ctx)
				}},
			{name: "CreateLies", inserts: true, check: wantBalance(777),
				run: func(ctx context.Context, id int64) error {
					return c.Account.Create().SetID(id).SetBalance(777).SetFenceToken(lieToken).SetVersion(lieVersion).Exec(ctx)
				}},
			{name: "CreateBulk", inserts: true, check: wantBatch,
				run: func(ctx context.Context, id int64) error {
					return c.Account.CreateBulk(c.Account.Create().SetID(id).SetBalance(777),
						c.Account.Create().SetID(id+1).SetBalance(777)).Exec(ctx)
				}},
			{name: "UpdateOne", existing: true, check: wantBalance(1),
				run: func(ctx context.Context, id int64) error {
					return c.Account.UpdateOneID(id).SetBalance(1).Exec(ctx)
				}},
			{name: "UpdateOneAdd", existing: true, check: wantIncrement(5),
				run: func(ctx context.Context, id int64) error {
					return c.Account.UpdateOneID(id).AddBalance(5).Exec(ctx)
				}},
			{name: "UpdateWhere", existing: true, check: wantBalance(2),
				run: func(ctx context.Context, id int64) error {
					return c.Account.Update().Where(account.ID(id)).SetBalance(2).Exec(ctx)
				}},
			{name: "DeleteOne", existing: true, deletes: true,
				run: func(ctx context.Context, id int64) error { return c.Account.DeleteOneID(id).Exec(ctx) }},
			{name: "DeleteWhere", existing: true, deletes: true,
				run: func(ctx context.Context, id int64) error {
					_, err := c.Account.Delete().Where(account.ID(id)).Exec(ctx)
					return err
				}},
		},
		forUpdate: func(ctx context.Context, id int64, save bool) error {
			tx, err := c.Tx(ctx)
			if err != nil {
				return err
			}
			a, err := tx.Account.Query().Where(account.ID(id)).ForUpdate().Only(ctx)
			if err == nil && save {
				err = tx.Account.UpdateOne(a).SetBalance(a.Balance).Exec(ctx)
			}
			if err != nil {
				return errors.Join(err, tx.Rollback())
			}
			return tx.Commit()
		},
		write: func(ctx context.Context, id int64) error {
			return c.Account.UpdateOneID(id).SetBalance(1).Exec(ctx)
		},
	}
}

// TestEntConstraintError: a duplicate through the fenced driver is what ent's
// IsConstraintError recognises, as on the plain driver (create-or-get code depends on
// it), on a guarded table (a unique email, the primary key) and an unguarded one;
// errors.Is(err, fencedsql.ErrDuplicate) still holds through ent's ConstraintError, and
// the message never quotes the duplicated value.
func TestEntConstraintError(t *testing.T) {
	for _, b := range backends {
		if entDialect[b.name] == "" {
			continue
		}
		t.Run(b.name, func(t *testing.T) {
			e, fenced, raw := entSetup(t, b)
			ctx := fencedsql.WithToken(testCtx(t), tokMine)
			id := newID()
			const email = "taken-value@example.com"
			if err := fenced.Account.Create().SetID(id).SetEmail(email).Exec(ctx); err != nil {
				t.Fatalf("first account: %v", err)
			}
			if err := fenced.Customer.Create().SetID(id).SetEmail(email).Exec(ctx); err != nil {
				t.Fatalf("first customer: %v", err)
			}
			dups := map[string]func(c *ent.Client, id int64) error{
				"guarded, unique email": func(c *ent.Client, id int64) error {
					return c.Account.Create().SetID(id).SetEmail(email).Exec(ctx)
				},
				"guarded, primary key": func(c *ent.Client, _ int64) error {
					return c.Account.Create().SetID(id).SetBalance(1).Exec(ctx)
				},
				"guarded, update to a taken email": func(c *ent.Client, id int64) error {
					if err := c.Account.Create().SetID(id).Exec(ctx); err != nil {
						return fmt.Errorf("create before the update: %w", err)
					}
					u := c.Account.UpdateOneID(id).SetEmail(email)
					if c == raw {
						u.AddVersion(1) // what the database-side guard wants of a plain UPDATE
					}
					return u.Exec(ctx)
				},
				"unguarded, unique email": func(c *ent.Client, id int64) error {
					return c.Customer.Create().SetID(id).SetEmail(email).Exec(ctx)
				},
			}
			for name, dup := range dups {
				t.Run(name, func(t *testing.T) {
					e.enter(t)
					// The plain driver first: the behaviour to keep.
					if err := dup(raw, newID()); !ent.IsConstraintError(err) {
						t.Fatalf("plain driver: ent.IsConstraintError(%v) = false; the case does not show a duplicate", err)
					}
					err := dup(fenced, newID())
					if !ent.IsConstraintError(err) {
						t.Errorf("fenced driver: ent.IsConstraintError(%v) = false, want true as on the plain driver", err)
					}
					var de *fencedsql.DuplicateError
					if !errors.Is(err, fencedsql.ErrDuplicate) || !errors.As(err, &de) {
						t.Errorf("fenced driver: %v (%T), want errors.Is(err, fencedsql.ErrDuplicate) through ent's error", err, err)
					}
					if err != nil && strings.Contains(err.Error(), email) {
						t.Errorf("fenced driver: message %q quotes the duplicated value", err)
					}
				})
			}
		})
	}
}
