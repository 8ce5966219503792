package sqllock_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/internal/logtest"
	"github.com/fencedsql/fencedsql/internal/metrictest"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// Invalid values given to New are configuration errors that name the option and the
// value; New does not touch the database (the pool points at a closed port).
func TestNewInvalidOptions(t *testing.T) {
	db, err := sql.Open("pgx", "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, tc := range []struct {
		name, want string // want: in the error text
		db         *sql.DB
		opts       []sqllock.Option
	}{
		{"nil db", "nil", nil, nil},
		{"zero poll minimum", "WithPollInterval: the bounds must have 0 < min <= max, got min 0s", db,
			[]sqllock.Option{sqllock.WithPollInterval(0, time.Second)}},
		{"poll maximum below minimum", "WithPollInterval: the bounds must have 0 < min <= max, got min 1s, max 1ms", db,
			[]sqllock.Option{sqllock.WithPollInterval(time.Second, time.Millisecond)}},
		{"unknown dialect", "WithDialect: unknown dialect Dialect(9)", db, []sqllock.Option{sqllock.WithDialect(sqllock.Dialect(9))}},
		{"bad table name", `"a.b.c"`, db, []sqllock.Option{sqllock.WithTable("a.b.c")}},
		{"empty table name", "WithTable", db, []sqllock.Option{sqllock.WithTable("")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			be, err := sqllock.New(tc.db, tc.opts...)
			if be != nil || !errors.Is(err, lockclient.ErrInvalidConfig) || errors.Is(err, lockclient.ErrUnavailable) {
				t.Fatalf("New = %v, %v; want ErrInvalidConfig", be, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New error %q does not say %q", err, tc.want)
			}
		})
	}
	if _, err := sqllock.New(db, sqllock.WithPollInterval(time.Millisecond, time.Millisecond)); err != nil {
		t.Fatalf("New with valid options: %v", err)
	}
}

// checkSchemaErr asserts that err reports the missing lease table table: a *SchemaError,
// errors.Is ErrSchema and ErrInvalidConfig, not ErrUnavailable, naming the table and
// the fix.
func checkSchemaErr(t *testing.T, what string, err error, table string) {
	t.Helper()
	if !errors.Is(err, sqllock.ErrSchema) || !errors.Is(err, lockclient.ErrInvalidConfig) {
		t.Fatalf("%s = %v, want ErrSchema and ErrInvalidConfig", what, err)
	}
	if errors.Is(err, lockclient.ErrUnavailable) || errors.Is(err, lockclient.ErrHeld) {
		t.Fatalf("%s = %v: also ErrUnavailable or ErrHeld", what, err)
	}
	var se *sqllock.SchemaError
	if !errors.As(err, &se) || se.Missing != "the lease table" || se.Table != table || se.Outdated {
		t.Fatalf("%s = %v (%+v): want a *SchemaError for the missing lease table %s", what, err, se, table)
	}
	for _, s := range []string{"sqllock.CreateTable", "sqllock.DDL", `"` + table + `"`, "does not exist"} {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("%s error %q does not say %s", what, err, s)
		}
	}
}

// Forgetting CreateTable is a configuration error: TryAcquire and Acquire return a
// *SchemaError at once (not ErrUnavailable at the context's deadline), counted as
// invalid_config; nothing is logged, neither to the backend's logger (no "schema
// version 2 … upgrade" warning) nor to slog's default logger; CheckTable finds it
// before. After CreateTable everything works.
//
// Not parallel: it captures slog's default logger.
func TestMissingTable(t *testing.T) {
	def := logtest.CaptureDefault(t)
	forEachServer(t, func(t *testing.T, srv server) {
		for _, table := range []string{"", "app_locks"} {
			name := table
			if name == "" {
				name = sqllock.DefaultTable
			}
			dsn := srv.newDSN(t)
			db := srv.open(t, dsn)
			rec := logtest.New()
			be, err := sqllock.New(db, sqllock.WithTable(name), sqllock.WithLogger(rec.Logger()))
			if err != nil {
				t.Fatal(err)
			}
			ctx := ctxT(t, 30*time.Second)
			checkSchemaErr(t, "CheckTable", be.CheckTable(ctx), name)

			mr := metrictest.New(t)
			c := lockclient.New(be, lockclient.WithTTL(5*time.Second), lockclient.WithOwner("a"), lockclient.WithMeterProvider(mr))
			defer c.Close(context.Background())
			for what, call := range map[string]func(context.Context) (*lockclient.Lease, error){
				"TryAcquire": func(ctx context.Context) (*lockclient.Lease, error) { return c.TryAcquire(ctx, "k") },
				"Acquire":    func(ctx context.Context) (*lockclient.Lease, error) { return c.Acquire(ctx, "k") },
			} {
				actx, cancel := context.WithTimeout(ctx, 10*time.Second)
				start := time.Now()
				l, err := call(actx)
				d := time.Since(start)
				cancel()
				if l != nil {
					t.Fatalf("%s without a lease table granted a lease", what)
				}
				checkSchemaErr(t, what, err, name)
				if d > time.Second {
					t.Fatalf("%s took %v: want the schema error at once", what, d)
				}
			}
			// A session of its own (a Client of another package) sees the same.
			s, err := be.Open(ctx, "raw", 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.TryAcquire(ctx, "k")
			checkSchemaErr(t, "Session.TryAcquire", err, name)
			if err := s.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if got := mr.Sum(t, lockclient.MetricAcquireDuration, lockclient.AttrOutcome.String("invalid_config")); got != 2 {
				t.Fatalf("invalid_config outcomes = %d, want 2", got)
			}
			if got := mr.Sum(t, lockclient.MetricAcquireDuration, lockclient.AttrOutcome.String("unavailable")); got != 0 {
				t.Fatalf("unavailable outcomes = %d, want 0", got)
			}
			if got := rec.Messages(); len(got) != 0 {
				t.Fatalf("the backend's logger got %q, want nothing (the table is missing, not old)", got)
			}

			// With the table, it works at once (no cached verdict).
			if err := sqllock.CreateTable(ctx, db, srv.dialect, table); err != nil {
				t.Fatal(err)
			}
			if err := be.CheckTable(ctx); err != nil {
				t.Fatalf("CheckTable after CreateTable: %v", err)
			}
			l, err := c.TryAcquire(ctx, "k")
			if err != nil {
				t.Fatalf("TryAcquire after CreateTable: %v", err)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
			l, err = c.Acquire(ctx, "k")
			if err != nil {
				t.Fatalf("Acquire after CreateTable: %v", err)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if got := withoutFlushLogWarning(rec.Messages()); len(got) != 0 {
				t.Fatalf("the backend's logger got %q, want nothing", got)
			}
		}
	})
	if got := def.Messages(); len(got) != 0 {
		t.Fatalf("slog's default logger got %q, want nothing", got)
	}
}

// A lease table of schema version 1 (created by an earlier release) is not mistaken for
// a missing one: Acquire works (without the queue); the warning goes to the backend's
// logger once, and nowhere else; CheckTable reports it as Outdated (errors.Is ErrSchema)
// until CreateTable upgrades it. A version 1 table whose token source was dropped is
// incomplete: a schema error, not unavailability.
//
// Not parallel: it captures slog's default logger.
func TestSchemaV1NotMissing(t *testing.T) {
	def := logtest.CaptureDefault(t)
	forEachServer(t, func(t *testing.T, srv server) {
		dsn := srv.newDSN(t)
		db := srv.open(t, dsn)
		ctx := ctxT(t, 60*time.Second)
		for _, q := range sqllock.DDLv1(srv.dialect, "") {
			if _, err := db.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		rec := logtest.New()
		be, err := sqllock.New(db, sqllock.WithLogger(rec.Logger()))
		if err != nil {
			t.Fatal(err)
		}
		err = be.CheckTable(ctx)
		var se *sqllock.SchemaError
		if !errors.As(err, &se) || !se.Outdated || !errors.Is(err, sqllock.ErrSchema) ||
			!strings.Contains(err.Error(), "upgrade it with sqllock.CreateTable") {
			t.Fatalf("CheckTable on a version 1 table = %v, want an Outdated *SchemaError", err)
		}
		c := lockclient.New(be, lockclient.WithTTL(5*time.Second))
		defer c.Close(context.Background())
		for range 2 {
			l, err := c.Acquire(ctx, "k")
			if err != nil {
				t.Fatalf("Acquire on a version 1 table: %v", err)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if got := withoutFlushLogWarning(rec.Messages()); len(got) != 1 || !strings.Contains(got[0], "schema version 2") {
			t.Fatalf("the backend's logger got %q, want one warning about schema version 2", got)
		}

		// The token source gone: incomplete, reported as such.
		drop := `DROP SEQUENCE fencedsql_locks_token_seq`
		if srv.dialect == sqllock.MySQL {
			drop = "DROP PROCEDURE fencedsql_locks_grant_v1"
		}
		if _, err := db.ExecContext(ctx, drop); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = c.TryAcquire(ctx, "k")
		if !errors.Is(err, sqllock.ErrSchema) || !errors.Is(err, lockclient.ErrInvalidConfig) || errors.Is(err, lockclient.ErrUnavailable) ||
			!strings.Contains(err.Error(), "sqllock.CreateTable") || time.Since(start) > time.Second {
			t.Fatalf("TryAcquire on an incomplete table = %v after %v, want a schema error at once", err, time.Since(start))
		}
		if err := be.CheckTable(ctx); !errors.As(err, &se) || se.Outdated || !strings.Contains(err.Error(), "incomplete") {
			t.Fatalf("CheckTable on an incomplete table = %v", err)
		}

		if err := sqllock.CreateTable(ctx, db, srv.dialect, ""); err != nil {
			t.Fatal(err)
		}
		if err := be.CheckTable(ctx); err != nil {
			t.Fatalf("CheckTable after the upgrade: %v", err)
		}
	})
	if got := def.Messages(); len(got) != 0 {
		t.Fatalf("slog's default logger got %q, want nothing", got)
	}
}

// withoutFlushLogWarning drops the warning about the MySQL server's
// innodb_flush_log_at_trx_commit (TestFlushLogSettingWarned), which the test
// servers, run with 0, give on every first check.
func withoutFlushLogWarning(msgs []string) []string {
	var out []string
	for _, m := range msgs {
		if !strings.Contains(m, "innodb_flush_log_at_trx_commit") {
			out = append(out, m)
		}
	}
	return out
}
