package mysql_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestEngineAllowList: the guarded table, its tombstone table and the floor must be
// InnoDB. An engine with transactions is not enough: FEDERATED/FederatedX and Spider
// report TRANSACTIONS = YES and keep the rows on another server, whose own writers
// never meet the guard's triggers; an engine this version does not know is refused,
// not assumed (red-team rt33a F4). The catalog rows are given, so every engine
// class is judged whatever plugins the server has.
func TestEngineAllowList(t *testing.T) {
	for _, c := range []struct {
		engine, transactions string
		refused              bool
		why                  string
	}{
		{"InnoDB", "YES", false, ""},
		{"innodb", "YES", false, ""},
		{"FEDERATED", "YES", true, "another server"},
		{"SPIDER", "YES", true, "another server"},
		{"CONNECT", "NO", true, "no transactions"},
		{"ROCKSDB", "YES", true, "not InnoDB"},
		{"MyISAM", "NO", true, "no transactions"},
		{"SomeNewEngine", "", true, "no transactions"},
	} {
		t.Run(c.engine, func(t *testing.T) {
			query := func(_ context.Context, q string, _ ...any) ([][]string, error) {
				if strings.Contains(q, "information_schema.ENGINES") {
					return [][]string{{"accounts", c.engine, c.transactions}}, nil
				}
				return nil, nil
			}
			linter := mysql.Dialect.(dialect.SchemaLinter)
			found, err := linter.LintSchema(context.Background(), query, dialect.LintTable{
				Table: dialect.TableName{Name: "accounts"}, TokenColumn: "fence_token", VersionColumn: "version"})
			if err != nil {
				t.Fatal(err)
			}
			if !c.refused {
				if len(found) != 0 {
					t.Errorf("ENGINE=%s: %v, want no problem", c.engine, found)
				}
				return
			}
			if len(found) != 1 || !strings.Contains(found[0].Problem, c.why) || !strings.Contains(strings.Join(found[0].Fix, ";"), "ENGINE=InnoDB") {
				t.Errorf("ENGINE=%s: %+v, want one problem saying %q with ALTER TABLE … ENGINE=InnoDB", c.engine, found, c.why)
			}
		})
	}
}

// TestFederatedTableRefused: a guarded table converted to FederatedX, its rows kept
// in a table of the same server reached through a connection string, is refused by
// the lazy check with ErrSchema and reported by schema.Check, although its engine
// has transactions: the far table's writers never meet the guard. Runs where the
// server can load ha_federatedx (TestEngineAllowList judges the engine classes
// everywhere).
func TestFederatedTableRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn := testdb.MySQL(t)
	admin := testdb.Open(t, "mysql", dsn)
	var loaded int
	if err := admin.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.ENGINES WHERE ENGINE = 'FEDERATED' AND SUPPORT IN ('YES', 'DEFAULT')").Scan(&loaded); err != nil {
		t.Fatal(err)
	}
	if loaded == 0 {
		if _, err := admin.ExecContext(ctx, "INSTALL SONAME 'ha_federatedx'"); err != nil {
			t.Logf("FederatedX cannot be loaded here (%v); the engine classes are judged by TestEngineAllowList", err)
			return
		}
	}
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	const columns = "(id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"
	testdb.Exec(t, admin,
		"CREATE TABLE accounts_far "+columns+" ENGINE=InnoDB",
		"INSERT INTO accounts_far (id, balance, fence_token) VALUES (1, 100, 5), (2, 100, 5)",
		fmt.Sprintf("CREATE TABLE accounts "+columns+" ENGINE=FEDERATED CONNECTION='mysql://%s:%s@%s/%s/accounts_far'", cfg.User, cfg.Passwd, cfg.Addr, cfg.DBName))
	reports, err := schema.Check(ctx, admin, mysql.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	if p := strings.Join(reports[0].Problems, "\n"); !strings.Contains(p, "another server") {
		t.Errorf("schema.Check of a FederatedX table: problems %q, want the engine reported", p)
	}
	// Everything else installed (the guard's triggers on the FederatedX table), so
	// that the engine alone is left to refuse.
	for _, r := range reports {
		for _, fix := range r.Fix {
			if fix != "ALTER TABLE `accounts` ENGINE=InnoDB" {
				testdb.Exec(t, admin, fix)
			}
		}
	}
	fenced := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=accounts"))
	if _, err := fenced.ExecContext(fencedsql.WithToken(ctx, 50), "UPDATE accounts SET balance = 1 WHERE id = 2"); !errors.Is(err, fencedsql.ErrSchema) {
		t.Errorf("fenced UPDATE of a FederatedX table: %v, want ErrSchema", err)
	}
}
