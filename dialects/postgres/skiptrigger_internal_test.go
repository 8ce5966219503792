package postgres

import "testing"

// TestPlpgsqlKeepsNew: the PL/pgSQL reading of skipDoor — every RETURN returns NEW
// (bare, parenthesized, COALESCE(NEW, …)) and NEW is never assigned whole.
func TestPlpgsqlKeepsNew(t *testing.T) {
	for src, want := range map[string]bool{
		` BEGIN RETURN NEW; END `:                                                     true,
		` BEGIN NEW.updated_at := now(); RETURN (NEW); END `:                          true,
		` BEGIN IF NEW IS DISTINCT FROM OLD THEN NEW.n = 1; END IF; return new; END `: true,
		` BEGIN RETURN COALESCE(NEW, OLD); END `:                                      true,
		` BEGIN PERFORM f(NEW); RAISE EXCEPTION 'no'; RETURN NEW; END `:               true,
		` BEGIN EXECUTE 'RETURN NULL'; RETURN NEW; END -- RETURN OLD`:                 true,
		` BEGIN RETURN OLD; END `:                                                     false,
		` BEGIN IF OLD.balance = 13 THEN RETURN NULL; END IF; RETURN NEW; END `:       false,
		` DECLARE r record; BEGIN r := NEW; RETURN r; END `:                           false,
		` BEGIN NEW := OLD; RETURN NEW; END `:                                         false,
		` BEGIN IF x THEN NEW = OLD; END IF; RETURN NEW; END `:                        false,
		` BEGIN SELECT * INTO STRICT NEW FROM t; RETURN NEW; END `:                    false,
		` BEGIN RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END; END `:        false,
		` BEGIN RETURN "NEW"; END `:                                                   false,
		` BEGIN RETURN 'unterminated; END `:                                           false,
	} {
		if got := plpgsqlKeepsNew(src); got != want {
			t.Errorf("plpgsqlKeepsNew(%q) = %v, want %v", src, got, want)
		}
	}
}

// TestPlpgsqlKeepsNewReplacedWhole: every way the reader knows of to replace NEW whole
// is a door (red-team rt36b F3) — block-qualified NEW assigned, a local variable named
// new (shadowing NEW) declared, NEW a FOR/FOREACH loop variable or an ALIAS FOR target,
// NEW in an INTO target list, NEW passed to a CALL (an INOUT parameter writes it
// back) — while NEW in expressions and NEW.col assignments stay fine.
func TestPlpgsqlKeepsNewReplacedWhole(t *testing.T) {
	for src, want := range map[string]bool{
		` BEGIN trg.new := OLD; RETURN NEW; END `:                                                                 false,
		` BEGIN "trg".NEW = OLD; RETURN NEW; END `:                                                                false,
		` BEGIN IF x THEN <<b>> trg.new := OLD; END IF; RETURN NEW; END `:                                         false,
		` DECLARE new accounts := OLD; BEGIN RETURN new; END `:                                                    false,
		` DECLARE a int; "new" record; BEGIN RETURN NEW; END `:                                                    false,
		` BEGIN DECLARE new record := OLD; BEGIN RETURN new; END; END `:                                           false,
		` BEGIN FOR new IN SELECT OLD.* LOOP END LOOP; RETURN NEW; END `:                                          false,
		` BEGIN FOR a, trg.New IN SELECT 1, OLD LOOP END LOOP; RETURN NEW; END `:                                  false,
		` BEGIN FOREACH new IN ARRAY arr LOOP END LOOP; RETURN NEW; END `:                                         false,
		` DECLARE n ALIAS FOR new; BEGIN n := OLD; RETURN NEW; END `:                                              false,
		` BEGIN SELECT 1, OLD.* INTO a, trg.new FROM t; RETURN NEW; END `:                                         false,
		` BEGIN EXECUTE 'SELECT $1' INTO new USING OLD; RETURN NEW; END `:                                         false,
		` BEGIN CALL cp(NEW, OLD); RETURN NEW; END `:                                                              false,
		` BEGIN CALL cp(b => OLD, a => trg.new); RETURN NEW; END `:                                                false,
		` BEGIN x := f(new := 1); RETURN NEW; END `:                                                               false,
		` BEGIN NEW.updated_at := now(); trg.new.n := 2; RETURN NEW; END `:                                        true,
		` BEGIN IF NEW IS DISTINCT FROM OLD THEN NEW.n := 1; END IF; RETURN NEW; END `:                            true,
		` BEGIN IF NEW.a IS DISTINCT FROM OLD.a THEN PERFORM f(NEW); END IF; RETURN NEW; END `:                    true,
		` DECLARE r record; BEGIN SELECT * INTO r FROM t WHERE id = NEW.id AND NEW IS NOT NULL; RETURN NEW; END `: true,
		` BEGIN FOR r IN SELECT * FROM t WHERE x = NEW.x LOOP PERFORM g(NEW, r); END LOOP; RETURN NEW; END `:      true,
		` BEGIN CALL log_row(NEW.id); RETURN NEW; END `:                                                           true,
		` BEGIN PERFORM 1 FROM t WHERE t.a = NEW.a FOR UPDATE; RETURN NEW; END `:                                  true,
	} {
		if got := plpgsqlKeepsNew(src); got != want {
			t.Errorf("plpgsqlKeepsNew(%q) = %v, want %v", src, got, want)
		}
	}
}

// TestPlpgsqlKeepsInsert: the reading of a BEFORE INSERT trigger's body (red-team
// rt46a F2) — RETURN NEW, NULL or OLD (NULL on INSERT) is fine, NEW or OLD replaced
// whole, or another record returned, is not.
func TestPlpgsqlKeepsInsert(t *testing.T) {
	for src, want := range map[string]bool{
		` BEGIN RETURN NEW; END `:                                                                                true,
		` BEGIN NEW.n := 1; RETURN NEW; END `:                                                                    true,
		` BEGIN IF NEW.n < 0 THEN RETURN NULL; END IF; RETURN NEW; END `:                                         true,
		` BEGIN IF TG_OP = 'DELETE' THEN RETURN (OLD); END IF; RETURN COALESCE(NEW, OLD); END `:                  true,
		` BEGIN NEW := ROW(NEW.id, 9000000000000000000); RETURN NEW; END `:                                       false,
		` BEGIN NEW := jsonb_populate_record(NEW, jsonb_build_object('fence' || '_token', 9)); RETURN NEW; END `: false,
		` BEGIN RETURN jsonb_populate_record(NEW, '{}'); END `:                                                   false,
		` DECLARE r record; BEGIN r := NEW; RETURN r; END `:                                                      false,
		` BEGIN OLD := ROW(NEW.id, 9); RETURN OLD; END `:                                                         false,
		` BEGIN trg.old = NEW; RETURN NULL; END `:                                                                false,
		` DECLARE old acc := NEW; BEGIN RETURN old; END `:                                                        false,
		` BEGIN SELECT 1, 9 INTO NEW; RETURN NEW; END `:                                                          false,
		` BEGIN CALL cp(NEW); RETURN NEW; END `:                                                                  false,
	} {
		if got := plpgsqlKeepsInsert(src); got != want {
			t.Errorf("plpgsqlKeepsInsert(%q) = %v, want %v", src, got, want)
		}
	}
}
