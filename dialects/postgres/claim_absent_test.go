package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// A claim of an absent key (red-team rt42e F1): SELECT … FOR UPDATE that pins the whole
// primary key and finds no row records "absence claimed at token t" in the table's
// tombstones, so an older holder's later INSERT of that key is refused (ErrFenced),
// while the claimer itself and newer holders insert it. Before, the claim claimed
// nothing and the stale INSERT landed under its older token.

// absentAcc creates acc (and pair, keyed on two columns) with the guards and the
// tombstone guard installed, and opens a fenced pool on them.
func absentAcc(t *testing.T) (raw, db *sql.DB) {
	t.Helper()
	raw, db, _ = absentAccDSN(t)
	return raw, db
}

// absentAccDSN is absentAcc, and the database's DSN.
func absentAccDSN(t *testing.T) (raw, db *sql.DB, dsn string) {
	t.Helper()
	dsn = testdb.Postgres(t)
	raw = rawWith(t, dsn,
		"CREATE TABLE acc (id bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)",
		`CREATE TABLE pair ("Region" text NOT NULL, n int NOT NULL, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0, PRIMARY KEY ("Region", n))`)
	checkAcc(t, raw, dsn)
	checkTable(t, raw, dsn, "pair")
	return raw, testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc,pair"), dsn
}

// claimAbsent claims, under token tok, with query and args, in a transaction it then
// ends with end (commit or rollback), and wants no row.
func claimAbsent(t *testing.T, db *sql.DB, tok uint64, commit bool, query string, args ...any) {
	t.Helper()
	ctx := fencedsql.WithToken(context.Background(), tok)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	var id int64
	if err := tx.QueryRowContext(ctx, query, args...).Scan(&id); !errors.Is(err, sql.ErrNoRows) {
		t.Fatalf("%s: %v, want sql.ErrNoRows", query, err)
	}
	if commit {
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
}

func insertAs(db *sql.DB, tok uint64, query string, args ...any) error {
	_, err := db.ExecContext(fencedsql.WithToken(context.Background(), tok), query, args...)
	return err
}

func TestClaimOfAbsentKeyFencesOlderInsert(t *testing.T) {
	_, db := absentAcc(t)
	claimAbsent(t, db, 60, true, "SELECT id FROM acc WHERE id = $1 FOR UPDATE", 7)
	if err := insertAs(db, 40, "INSERT INTO acc (id) VALUES (7)"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("INSERT under token 40 of a key claimed absent under 60: %v, want ErrFenced", err)
	}
	if err := insertAs(db, 40, "INSERT INTO acc (id) VALUES (7) ON CONFLICT (id) DO UPDATE SET balance = 1"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("upsert under token 40 of a key claimed absent under 60: %v, want ErrFenced", err)
	}
	if err := insertAs(db, 60, "INSERT INTO acc (id) VALUES (7)"); err != nil {
		t.Fatalf("the claimer's own INSERT (token 60): %v", err)
	}
	// A newer holder: the key is there now; it deletes and re-creates it.
	if err := insertAs(db, 70, "DELETE FROM acc WHERE id = 7"); err != nil {
		t.Fatal(err)
	}
	if err := insertAs(db, 70, "INSERT INTO acc (id) VALUES (7)"); err != nil {
		t.Fatalf("a newer holder's INSERT (token 70): %v", err)
	}
}

// The claimer creates the key in the claiming transaction ("lock, check absent, then
// create"); equal tokens pass the tombstone.
func TestClaimOfAbsentKeyThenCreate(t *testing.T) {
	_, db := absentAcc(t)
	ctx := fencedsql.WithToken(context.Background(), 60)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	rows, err := tx.QueryContext(ctx, "SELECT id, balance FROM acc WHERE id = $1 FOR UPDATE", 8)
	if err != nil {
		t.Fatal(err)
	}
	if rows.Next() {
		t.Fatal("a row")
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO acc (id, balance) VALUES ($1, 5)", 8); err != nil {
		t.Fatalf("the claimer's INSERT in its transaction: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := insertAs(db, 50, "UPDATE acc SET balance = 0 WHERE id = 8"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("stale UPDATE: %v, want ErrFenced", err)
	}
}

// A claim rolled back records nothing, nor does one inside a savepoint rolled back.
func TestClaimOfAbsentKeyRolledBackRecordsNothing(t *testing.T) {
	_, db := absentAcc(t)
	claimAbsent(t, db, 60, false, "SELECT id FROM acc WHERE id = $1 FOR UPDATE", 9)
	if err := insertAs(db, 40, "INSERT INTO acc (id) VALUES (9)"); err != nil {
		t.Fatalf("INSERT after a rolled-back claim: %v", err)
	}
	ctx := fencedsql.WithToken(context.Background(), 60)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	if _, err := tx.ExecContext(ctx, "SAVEPOINT s"); err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := tx.QueryRowContext(ctx, "SELECT id FROM acc WHERE id = $1 FOR UPDATE", 10).Scan(&id); !errors.Is(err, sql.ErrNoRows) {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT s"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := insertAs(db, 40, "INSERT INTO acc (id) VALUES (10)"); err != nil {
		t.Fatalf("INSERT after a claim rolled back to its savepoint: %v", err)
	}
}

// Spellings of a whole key pinned by equality: a composite key in either order, a
// quoted column, a schema-qualified table and column, literals, the value first, the
// claim sent with Exec; each records the key claimed and refuses the older INSERT.
func TestClaimOfAbsentKeySpellings(t *testing.T) {
	_, db := absentAcc(t)
	for i, c := range []struct {
		claim  string
		args   []any
		insert string
	}{
		{`SELECT n FROM pair WHERE "Region" = $1 AND n = $2 FOR UPDATE`, []any{"eu", 1}, `INSERT INTO pair ("Region", n) VALUES ('eu', 1)`},
		{`SELECT n FROM pair WHERE n = $2 AND $1 = "Region" FOR UPDATE`, []any{"eu", 2}, `INSERT INTO pair ("Region", n) VALUES ('eu', 2)`},
		{`SELECT n FROM public.pair p WHERE p."Region" = 'us' AND p.n = 3 FOR UPDATE`, nil, `INSERT INTO pair ("Region", n) VALUES ('us', 3)`},
		{`SELECT id FROM public.acc WHERE acc.id = 11 AND balance > 0 FOR UPDATE`, nil, `INSERT INTO acc (id) VALUES (11)`},
		{`SELECT id FROM acc WHERE (id = $1) FOR UPDATE`, []any{12}, `INSERT INTO acc (id) VALUES (12)`},
		{`SELECT id FROM acc WHERE "id" = $1 FOR NO KEY UPDATE`, []any{"13"}, `INSERT INTO acc (id) VALUES (13)`},
	} {
		claimAbsent(t, db, 60, true, c.claim, c.args...)
		if err := insertAs(db, 40, c.insert); !errors.Is(err, fencedsql.ErrFenced) {
			t.Errorf("%d: %s after %s under 60: %v, want ErrFenced", i, c.insert, c.claim, err)
		}
	}
	// Sent with Exec.
	ctx := fencedsql.WithToken(context.Background(), 60)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "SELECT id FROM acc WHERE id = $1 FOR UPDATE", 14); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := insertAs(db, 40, "INSERT INTO acc (id) VALUES (14)"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("INSERT after an Exec claim under 60: %v, want ErrFenced", err)
	}
}

// A claim that does not pin the whole key (a range, part of a composite key) claims
// nothing when it finds nothing, as before (documented in G10).
func TestClaimOfAbsentRangeRecordsNothing(t *testing.T) {
	_, db := absentAcc(t)
	claimAbsent(t, db, 60, true, "SELECT id FROM acc WHERE id > $1 FOR UPDATE", 100)
	claimAbsent(t, db, 60, true, `SELECT n FROM pair WHERE "Region" = $1 FOR UPDATE`, "eu")
	if err := insertAs(db, 40, "INSERT INTO acc (id) VALUES (101)"); err != nil {
		t.Fatalf("INSERT after a range claim: %v", err)
	}
	if err := insertAs(db, 40, `INSERT INTO pair ("Region", n) VALUES ('eu', 1)`); err != nil {
		t.Fatalf("INSERT after a partial-key claim: %v", err)
	}
}

// A stale INSERT racing the claim: it waits for the claiming transaction and is then
// refused, under READ COMMITTED and REPEATABLE READ (there as a serialization failure
// or ErrFenced).
func TestClaimOfAbsentKeyRacingInsert(t *testing.T) {
	for _, iso := range []sql.IsolationLevel{sql.LevelReadCommitted, sql.LevelRepeatableRead} {
		t.Run(iso.String(), func(t *testing.T) {
			_, db := absentAcc(t)
			ctx := fencedsql.WithToken(context.Background(), 60)
			tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: iso})
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback() //nolint:errcheck
			var id int64
			if err := tx.QueryRowContext(ctx, "SELECT id FROM acc WHERE id = $1 FOR UPDATE", 20).Scan(&id); !errors.Is(err, sql.ErrNoRows) {
				t.Fatal(err)
			}
			stale := fencedsql.WithToken(context.Background(), 40)
			done := make(chan error, 1)
			go func() {
				stx, err := db.BeginTx(stale, &sql.TxOptions{Isolation: iso})
				if err != nil {
					done <- err
					return
				}
				defer stx.Rollback() //nolint:errcheck
				if _, err := stx.ExecContext(stale, "INSERT INTO acc (id) VALUES (20)"); err != nil {
					done <- err
					return
				}
				done <- stx.Commit()
			}()
			select {
			case err := <-done:
				t.Fatalf("the stale INSERT did not wait for the claiming transaction: %v", err)
			case <-time.After(500 * time.Millisecond):
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			err = <-done
			if !errors.Is(err, fencedsql.ErrFenced) && !isSerialization(err) {
				t.Fatalf("stale INSERT racing the claim: %v, want ErrFenced or a serialization failure", err)
			}
		})
	}
}

// checkTable installs what schema.Check proposes for table.
func checkTable(t *testing.T, raw *sql.DB, dsn, table string) {
	t.Helper()
	reps, err := schema.Check(context.Background(), raw, postgres.Dialect, schema.GuardSpec{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reps {
		rawWith(t, dsn, r.Fix...)
	}
}

func isSerialization(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "40001"
}

// BenchmarkClaimOfAbsentKey: a pinned claim in its own transaction (rolled back), of a
// key that exists (no record) and of one that does not (the recorder's statement).
func BenchmarkClaimOfAbsentKey(b *testing.B) {
	dsn := testdb.Postgres(b)
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	ctx := context.Background()
	if _, err := raw.ExecContext(ctx, "CREATE TABLE acc (id bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)"); err != nil {
		b.Fatal(err)
	}
	reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "acc"})
	if err != nil {
		b.Fatal(err)
	}
	for _, q := range reps[0].Fix {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	db, err := sql.Open("fenced-pgx", dsn+"&fenced_tables=acc")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	tctx := fencedsql.WithToken(ctx, 5)
	if _, err := db.ExecContext(tctx, "INSERT INTO acc (id) VALUES (1)"); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		id   int64
	}{{"found", 1}, {"absent", 2}} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				tx, err := db.BeginTx(tctx, nil)
				if err != nil {
					b.Fatal(err)
				}
				var id int64
				if err := tx.QueryRowContext(tctx, "SELECT id FROM acc WHERE id = $1 FOR UPDATE", c.id).Scan(&id); err != nil && !errors.Is(err, sql.ErrNoRows) {
					b.Fatal(err)
				}
				if err := tx.Rollback(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The claim's other forms: prepared, and two statements (a user AFTER UPDATE trigger
// makes the one-statement claim's verdict no: the fencing UPDATE, then the read), where
// the record follows an UPDATE that stamped nothing.
func TestClaimOfAbsentKeyPreparedAndTwoStatements(t *testing.T) {
	raw, db, dsn := absentAccDSN(t)
	ctx := fencedsql.WithToken(context.Background(), 60)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := tx.PrepareContext(ctx, "SELECT id FROM acc WHERE id = $1 FOR UPDATE")
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := st.QueryRowContext(ctx, 30).Scan(&id); !errors.Is(err, sql.ErrNoRows) {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := insertAs(db, 40, "INSERT INTO acc (id) VALUES (30)"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("INSERT after a prepared claim under 60: %v, want ErrFenced", err)
	}
	testdb.Exec(t, raw,
		"CREATE FUNCTION acc_noop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$",
		"CREATE TRIGGER acc_noop AFTER UPDATE ON acc FOR EACH ROW EXECUTE FUNCTION acc_noop()")
	two := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
	claimAbsent(t, two, 60, true, "SELECT id FROM acc WHERE id = $1 FOR UPDATE", 31)
	if err := insertAs(two, 40, "INSERT INTO acc (id) VALUES (31)"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("INSERT after a two-statement claim under 60: %v, want ErrFenced", err)
	}
	if err := insertAs(two, 60, "INSERT INTO acc (id) VALUES (31)"); err != nil {
		t.Fatalf("the claimer's INSERT: %v", err)
	}
}
