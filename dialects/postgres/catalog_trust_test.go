// The catalog reads' trust in pg_catalog (catalogtrust.go, red-team rt52a F1, F2): a
// function or operator on the session's path that would answer the lazy check's and
// schema.Check's door queries in pg_catalog's place — an exact-match operator for a
// pair of types pg_catalog serves only through a coercion, on the default path; a
// same-signature function of a schema the path lists before pg_catalog — makes the
// session unfit (*SessionError, ErrSchema) and schema.Check fail typed; the doors stay
// seen. Extensions' functions and operators over their own types, arrays, or
// pg_catalog's exact signatures are not refused.

package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// catalogPoison is one object shadowing pg_catalog's for the library's queries; each
// gives a wrong answer (false, 0, NULL) wherever PostgreSQL prefers it.
type catalogPoison struct {
	name string
	ddl  []string
	drop string
}

// doorQuery is true inside the door queries only (recognised by their text, as
// current_query() shows it): a poison answers wrongly there and rightly elsewhere, so
// that only the doors hide.
const doorQuery = `pg_catalog.current_query() OPERATOR(pg_catalog.~) '(pg_relation_is_updatable|20 <> 0|ev_type <> .1.|inh\(rel, anc\))'`

func operatorPoison(op, left, right, result, rightExpr, wrong string) catalogPoison {
	fn := "poison_" + strings.NewReplacer("=", "eq", "&", "and", "|", "or", "<", "lt", ">", "gt", "~", "like").Replace(op) + "_" + left + "_" + right
	fn = strings.NewReplacer(`"`, "", " ", "_").Replace(fn)
	return catalogPoison{op + "(" + left + "," + right + ")", []string{
		"CREATE FUNCTION public." + fn + "(a " + left + ", b " + right + ") RETURNS " + result + " LANGUAGE sql STABLE AS $$SELECT CASE WHEN " + doorQuery + " THEN " + wrong + " ELSE " + rightExpr + " END$$",
		"CREATE OPERATOR public." + op + " (LEFTARG = " + left + ", RIGHTARG = " + right + ", FUNCTION = public." + fn + ")",
	}, "DROP FUNCTION public." + fn + " CASCADE"}
}

func functionPoison(name, args, result, rightExpr, wrong string) catalogPoison {
	return catalogPoison{name + "(" + args + ")", []string{
		"CREATE FUNCTION public." + name + "(" + args + ") RETURNS " + result + " LANGUAGE sql STABLE AS $$SELECT CASE WHEN " + doorQuery + " THEN " + wrong + " ELSE " + rightExpr + " END$$",
	}, "DROP FUNCTION public." + name + "(" + strings.NewReplacer("n ", "", "a ", "", "b ", "").Replace(args) + ")"}
}

// catalogPoisons: operators for the type pairs the door queries compare and
// pg_catalog has no exact operator for, and functions shadowing the ones they call
// with a signature pg_catalog lacks.
var catalogPoisons = []catalogPoison{
	operatorPoison("=", "oid", "regclass", "boolean", "a OPERATOR(pg_catalog.=) b::pg_catalog.oid", "false"),
	operatorPoison("=", "regclass", "oid", "boolean", "a::pg_catalog.oid OPERATOR(pg_catalog.=) b", "false"),
	operatorPoison("=", "oid", "integer", "boolean", "a OPERATOR(pg_catalog.=) b::pg_catalog.oid", "false"),
	operatorPoison("<>", "oid", "regclass", "boolean", "a OPERATOR(pg_catalog.<>) b::pg_catalog.oid", "false"),
	operatorPoison("&", "smallint", "integer", "integer", "a::pg_catalog.int4 OPERATOR(pg_catalog.&) b", "0"),
	operatorPoison("&", "smallint", "bigint", "bigint", "a::pg_catalog.int8 OPERATOR(pg_catalog.&) b", "0"),
	operatorPoison("=", `"char"`, "text", "boolean", "a::pg_catalog.text OPERATOR(pg_catalog.=) b", "false"),
	operatorPoison("=", "name", "character varying", "boolean", "a OPERATOR(pg_catalog.=) b::pg_catalog.text", "false"),
	operatorPoison("||", "text", "name", "text", "a OPERATOR(pg_catalog.||) b::pg_catalog.text", "''"),
	operatorPoison("~~", "name", "character varying", "boolean", "a OPERATOR(pg_catalog.~~) b::pg_catalog.text", "false"),
	functionPoison("to_regclass", "n name", "regclass", "pg_catalog.to_regclass(n::pg_catalog.text)", "NULL"),
	functionPoison("to_regclass", "n character varying", "regclass", "pg_catalog.to_regclass(n::pg_catalog.text)", "NULL"),
	functionPoison("strpos", "a name, b text", "integer", "pg_catalog.strpos(a::pg_catalog.text, b)", "0"),
	functionPoison("format", "a text, b text", "text", "pg_catalog.format(a, b)", "''"),
	functionPoison("pg_relation_is_updatable", "a oid, b boolean", "integer", "pg_catalog.pg_relation_is_updatable(a::pg_catalog.regclass, b)", "0"),
	functionPoison("current_setting", "a name", "text", "pg_catalog.current_setting(a::pg_catalog.text)", "''"),
}

// catalogDoors: a door of each kind the lazy check refuses, with a write through it.
var catalogDoors = []struct {
	name, stale string
	guarded     bool // the stale write is a guarded write (the session check refuses it)
	ddl         []string
}{
	{"before-trigger", "UPDATE acc SET balance = 666 WHERE id = 1", true, []string{
		`CREATE FUNCTION aaa_keep() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN NEW.fence_token := COALESCE(NEW.fence_token, OLD.fence_token); RETURN NEW; END$$`,
		`CREATE TRIGGER aaa_keep BEFORE UPDATE ON acc FOR EACH ROW EXECUTE FUNCTION aaa_keep()`}},
	{"trigger-other", "INSERT INTO door_other (x) VALUES (666)", false, []string{
		`CREATE FUNCTION door_trg() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN UPDATE acc SET balance = NEW.x, version = version + 1 WHERE id = 1; RETURN NEW; END$$`,
		`CREATE TRIGGER door_trg AFTER INSERT ON door_other FOR EACH ROW EXECUTE FUNCTION door_trg()`}},
	{"rule", "INSERT INTO door_other (x) VALUES (666)", false, []string{
		`CREATE RULE door_rule AS ON INSERT TO door_other DO ALSO UPDATE acc SET balance = NEW.x, version = version + 1 WHERE id = 1`}},
	{"view", "UPDATE door_view SET balance = 666, version = version + 1 WHERE id = 1", false, []string{
		`CREATE VIEW door_view AS SELECT * FROM acc`}},
}

// catalogTrustSetup: acc guarded with tombstones, a door of each kind, and door_other.
func catalogTrustSetup(t *testing.T) (dsn string, ctx context.Context) {
	dsn = testdb.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	setup := rawWith(t, dsn,
		"CREATE TABLE acc (id bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)",
		"CREATE TABLE door_other (x bigint)",
		"INSERT INTO acc (id) VALUES (1)")
	checkAcc(t, setup, dsn)
	setup.Close()
	return dsn, ctx
}

// wantDoorSeen: a fresh pool's guarded write is refused with ErrSchema, a stale
// guarded write does not land, and schema.Check reports the door or fails typed.
func wantDoorSeen(t *testing.T, ctx context.Context, dsn, what string, staleGuarded bool, stale string) {
	t.Helper()
	raw := rawWith(t, dsn)
	defer raw.Close()
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
	defer db.Close()
	_, e10 := db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE acc SET balance = 10 WHERE id = 1")
	if !errors.Is(e10, fencedsql.ErrSchema) {
		t.Errorf("%s: a fresh pool's guarded write: %v, want ErrSchema", what, e10)
	}
	if staleGuarded {
		var before, bal int64
		if err := raw.QueryRowContext(ctx, "SELECT balance FROM acc WHERE id = 1").Scan(&before); err != nil {
			t.Fatal(err)
		}
		_, e5 := db.ExecContext(fencedsql.WithToken(ctx, 5), stale)
		if err := raw.QueryRowContext(ctx, "SELECT balance FROM acc WHERE id = 1").Scan(&bal); err != nil {
			t.Fatal(err)
		}
		if e5 == nil || bal != before {
			t.Errorf("%s: stale write %q landed: err=%v balance=%d", what, stale, e5, bal)
		}
	}
	reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "acc"})
	if err != nil {
		if !errors.Is(err, fencedsql.ErrSchema) {
			t.Errorf("%s: schema.Check: untyped %v", what, err)
		}
		return
	}
	for _, r := range reps {
		if len(r.SideDoors) > 0 || len(r.Problems) > 0 {
			return
		}
	}
	t.Errorf("%s: schema.Check reports nothing", what)
}

// TestCatalogTrustShadowingObjects: each poison on the default path ("$user", public)
// alone, against the BEFORE-trigger door; then all of them against each door kind.
func TestCatalogTrustShadowingObjects(t *testing.T) {
	dsn, ctx := catalogTrustSetup(t)
	raw := rawWith(t, dsn)
	testdb.Exec(t, raw, catalogDoors[0].ddl...)
	for _, p := range catalogPoisons {
		testdb.Exec(t, raw, p.ddl...)
		wantDoorSeen(t, ctx, dsn, "poison "+p.name, true, catalogDoors[0].stale)
		testdb.Exec(t, raw, p.drop)
	}
	for _, p := range catalogPoisons {
		testdb.Exec(t, raw, p.ddl...)
	}
	for _, d := range catalogDoors[1:] {
		testdb.Exec(t, raw, d.ddl...)
		wantDoorSeen(t, ctx, dsn, "all poisons, door "+d.name, d.guarded, d.stale)
	}
}

// TestCatalogTrustPathBeforeCatalog: a database default search_path listing a schema
// before pg_catalog, whose same-signature to_regclass hides the door queries' table
// (red-team rt52a F2), is refused; pg_temp first (the session's temporary schema,
// never searched for functions) is not.
func TestCatalogTrustPathBeforeCatalog(t *testing.T) {
	for _, d := range []int{0, 3} {
		door := catalogDoors[d]
		t.Run(door.name, func(t *testing.T) {
			dsn, ctx := catalogTrustSetup(t)
			raw := rawWith(t, dsn)
			testdb.Exec(t, raw, door.ddl...)
			testdb.Exec(t, raw, "CREATE SCHEMA evil",
				`CREATE FUNCTION evil.to_regclass(n text) RETURNS pg_catalog.regclass LANGUAGE sql STABLE AS $$SELECT NULL::pg_catalog.regclass$$`,
				"ALTER DATABASE "+dbDefaultName(t, dsn)+" SET search_path = evil, public, pg_catalog")
			raw.Close()
			wantDoorSeen(t, ctx, dsn, "evil.to_regclass first on the path", door.guarded, door.stale)
		})
	}
	t.Run("pg_temp first", func(t *testing.T) {
		dsn, ctx := catalogTrustSetup(t)
		db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc&search_path=pg_temp,pg_catalog,public")
		if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE acc SET balance = 10 WHERE id = 1"); err != nil {
			t.Errorf("search_path pg_temp, pg_catalog, public: %v", err)
		}
	})
}

// TestCatalogTrustLegitimateObjects: what extensions commonly put on the path is not
// refused — operators and functions over their own types (citext, PostGIS), over
// arrays (intarray's &(int4[], int4[])), operators the library does not use (pg_trgm's
// %(text, text)), and a twin of pg_catalog's signature (pgcrypto's
// gen_random_uuid()), which pg_catalog first on the path wins.
func TestCatalogTrustLegitimateObjects(t *testing.T) {
	dsn, ctx := catalogTrustSetup(t)
	raw := rawWith(t, dsn)
	testdb.Exec(t, raw,
		"CREATE DOMAIN public.mytext AS text",
		"CREATE TYPE public.ext_t AS (a int)",
		"CREATE FUNCTION public.ext_eq(a public.ext_t, b public.ext_t) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$SELECT true$$",
		"CREATE OPERATOR public.= (LEFTARG = public.ext_t, RIGHTARG = public.ext_t, FUNCTION = public.ext_eq)",
		"CREATE FUNCTION public.lower(a public.ext_t) RETURNS text LANGUAGE sql IMMUTABLE AS $$SELECT ''$$",
		"CREATE FUNCTION public.arr_and(a int[], b int[]) RETURNS int[] LANGUAGE sql IMMUTABLE AS $$SELECT a$$",
		"CREATE OPERATOR public.& (LEFTARG = int[], RIGHTARG = int[], FUNCTION = public.arr_and)",
		"CREATE FUNCTION public.trgm_sim(a text, b text) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$SELECT true$$",
		"CREATE OPERATOR public.% (LEFTARG = text, RIGHTARG = text, FUNCTION = public.trgm_sim)",
		"CREATE FUNCTION public.gen_random_uuid() RETURNS uuid LANGUAGE sql AS $$SELECT pg_catalog.gen_random_uuid()$$")
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE acc SET balance = 10 WHERE id = 1"); err != nil {
		t.Errorf("guarded write with extension-like objects on the path: %v", err)
	}
	reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "acc"})
	if err != nil {
		t.Fatalf("schema.Check: %v", err)
	}
	for _, r := range reps {
		if len(r.Problems) > 0 {
			t.Errorf("schema.Check with extension-like objects on the path: %q", r.Problems)
		}
	}
}
