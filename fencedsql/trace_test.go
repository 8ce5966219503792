package fencedsql_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/XSAM/otelsql"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	moderncsqlite "modernc.org/sqlite"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

var otelDrivers atomic.Int64

// The fenced driver composes with github.com/XSAM/otelsql in both orders:
//
//   - "otelsql outside": otelsql.Open("fenced-sqlite", …) wraps the fenced driver. Its
//     statement spans show the caller's SQL; fencedsql's event lands on that span.
//   - "fenced outside": fencedsql.Wrap(otelsql.WrapDriver(driver)) fences an
//     instrumented driver. otelsql's spans show the rewritten SQL that reached the
//     database; fencedsql's event lands on the caller's span.
//
// In both, fenced writes, ErrFenced, Unwrap through both layers and the event's
// table/token/outcome work.
func TestOtelsqlComposition(t *testing.T) {
	for _, order := range []string{"otelsql outside", "fenced outside"} {
		t.Run(order, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			defer tp.Shutdown(context.Background())
			dsn := testdb.SQLite(t)
			var db *sql.DB
			var err error
			if order == "otelsql outside" {
				db, err = otelsql.Open(sqlite.DriverName, dsn+"&fenced_tables=accounts&fenced_allow=ddl", otelsql.WithTracerProvider(tp))
			} else {
				name := fmt.Sprintf("fenced-otel-sqlite-%d", otelDrivers.Add(1))
				fencedsql.Register(name, otelsql.WrapDriver(&moderncsqlite.Driver{}, otelsql.WithTracerProvider(tp)),
					fencedsql.WithDialect(sqlite.Dialect), fencedsql.Guard("accounts"), fencedsql.WithDDL(true))
				db, err = sql.Open(name, dsn)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			db.SetMaxOpenConns(1)
			ctx := context.Background()
			if _, err := db.ExecContext(ctx, `CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`); err != nil {
				t.Fatal(err)
			}
			if _, err := db.ExecContext(fencedsql.WithToken(ctx, 5), `INSERT INTO accounts (id, balance) VALUES (1, 100)`); err != nil {
				t.Fatal(err)
			}

			tracer := tp.Tracer("test")
			sctx, parent := tracer.Start(ctx, "transfer")
			if _, err := db.ExecContext(fencedsql.WithToken(sctx, 7), `UPDATE accounts SET balance = balance - 10 WHERE id = 1`); err != nil {
				t.Fatal(err)
			}
			_, err = db.ExecContext(fencedsql.WithToken(sctx, 6), `UPDATE accounts SET balance = 0 WHERE id = 1`)
			if !errors.Is(err, fencedsql.ErrFenced) {
				t.Fatalf("stale write: %v, want ErrFenced", err)
			}
			// A RETURNING statement is recorded when its rows close.
			var bal int64
			if err := db.QueryRowContext(fencedsql.WithToken(sctx, 8), `UPDATE accounts SET balance = balance + 1 WHERE id = 1 RETURNING balance`).Scan(&bal); err != nil || bal != 91 {
				t.Fatalf("RETURNING: %d %v", bal, err)
			}
			parent.End()

			// Unwrap reaches modernc's connection through both layers.
			c, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			err = c.Raw(func(dc any) error {
				if got := fmt.Sprintf("%T", fencedsql.Unwrap(dc)); got != "*sqlite.conn" {
					t.Errorf("Unwrap = %s, want modernc's *sqlite.conn", got)
				}
				return nil
			})
			c.Close()
			if err != nil {
				t.Fatal(err)
			}

			type event struct {
				span, outcome, table string
				token                int64
			}
			var events []event
			var statements []string
			for _, s := range rec.Ended() {
				for _, a := range s.Attributes() {
					if a.Key == "db.query.text" && strings.Contains(a.Value.AsString(), "UPDATE accounts") {
						statements = append(statements, a.Value.AsString())
					}
				}
				for _, e := range s.Events() {
					if e.Name != fencedsql.EventFencedWrite {
						continue
					}
					ev := event{span: s.Name()}
					if s.Name() == "sql.conn.query" {
						ev.span = "sql.conn.exec" // the RETURNING statement's span
					}
					for _, a := range e.Attributes {
						switch a.Key {
						case fencedsql.AttrOutcome:
							ev.outcome = a.Value.AsString()
						case fencedsql.AttrDBTable:
							ev.table = a.Value.AsString()
						case fencedsql.AttrToken:
							ev.token = a.Value.AsInt64()
						}
					}
					if ev.token != 5 { // the setup INSERT
						events = append(events, ev)
					}
				}
			}
			if len(statements) == 0 {
				t.Fatal("otelsql recorded no statement span")
			}
			rewritten := strings.Contains(statements[0], "fence_token")
			wantSpan := "sql.conn.exec"
			if order == "fenced outside" {
				wantSpan = "transfer"
				if !rewritten {
					t.Errorf("otelsql under the fenced driver should see the rewritten SQL, saw %q", statements[0])
				}
			} else if rewritten {
				t.Errorf("otelsql over the fenced driver should see the caller's SQL, saw %q", statements[0])
			}
			want := []event{{wantSpan, fencedsql.OutcomeAccepted, "accounts", 7}, {wantSpan, fencedsql.OutcomeFenced, "accounts", 6}}
			if len(events) != 3 || events[0] != want[0] || events[1] != want[1] || events[2].outcome != fencedsql.OutcomeAccepted || events[2].token != 8 {
				t.Errorf("events %+v\nwant %+v and an accepted RETURNING with token 8", events, want)
			}
		})
	}
}

// The guarded-statement duration histogram has second-scale buckets (the SDK's default
// boundaries are for milliseconds) and records the outcome.
func TestGuardedWriteDurationHistogram(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	db := sql.OpenDB(mustConnector(t, testdb.SQLite(t), fencedsql.WithMeterProvider(mp)))
	defer db.Close()
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE TABLE accounts (id INTEGER PRIMARY KEY, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 5), `INSERT INTO accounts (id) VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 4), `UPDATE accounts SET id = 1 WHERE id = 1`); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("stale write: %v", err)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != fencedsql.MetricGuardedWriteDuration {
				continue
			}
			if m.Unit != "s" {
				t.Errorf("unit %q", m.Unit)
			}
			for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
				if fmt.Sprint(dp.Bounds) != fmt.Sprint(fencedsql.DurationBuckets) || dp.Bounds[0] != 0.005 {
					t.Errorf("bounds %v, want %v", dp.Bounds, fencedsql.DurationBuckets)
				}
				o, _ := dp.Attributes.Value(fencedsql.AttrOutcome)
				got[o.AsString()] += dp.Count
			}
		}
	}
	if got[fencedsql.OutcomeAccepted] != 1 || got[fencedsql.OutcomeFenced] != 1 {
		t.Errorf("observations by outcome %v, want one accepted and one fenced", got)
	}
}

func mustConnector(t *testing.T, dsn string, opts ...fencedsql.Option) driver.Connector {
	t.Helper()
	d := fencedsql.Wrap(&moderncsqlite.Driver{}, append([]fencedsql.Option{fencedsql.WithDialect(sqlite.Dialect), fencedsql.Guard("accounts"), fencedsql.WithDDL(true)}, opts...)...)
	c, err := d.(driver.DriverContext).OpenConnector(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
