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
