package fencedsql

import (
	"context"
	"fmt"
)

// warnChecksOff says, once per pool at its first connection, at Warn, each check its
// configuration turns off, and what turned it off: the DSN parameter, the option given
// in code, or both (red-team rt34d F3: a DSN copied from a test set-up switched the
// checks off in production without a word). It logs through configLogger: the pool's
// logger, else slog.Default(), so that a pool opened by a registered driver name —
// which carries no logger — is not silent either.
//
//   - the lazy schema and session checks off (WithSchemaCheck(false),
//     fenced_schema_check=false);
//   - DDL naming a guarded table allowed (WithDDL(true), fenced_allow=ddl);
//   - dynamic SQL allowed (WithDynamicSQL(true), fenced_allow=dynamic_sql);
//   - the lazy check's verdicts kept for the pool's life (WithSchemaRecheck with a
//     negative bound, NeverRecheck);
//   - the fence itself, for a pool that guards no table at all: nothing listed
//     (fenced_tables, Guard), no table recorded in a registry or carrying the
//     guard's triggers, so that every write passes unfenced — the DSN of a plain pool
//     given to a fenced driver, or a database whose guards were never installed
//     (red-team rt31d F1).
func (k *core) warnChecksOff(ctx context.Context) {
	cfg := &k.cfg
	l := cfg.configLogger()
	if len(k.rw.Tables()) == 0 {
		l.WarnContext(ctx, "fencedsql: the pool guards no table: none is listed (fenced_tables, Guard) and the database records none as guarded (no registry row, no guard trigger), so every write passes unfenced. List the tables the lock protects, or install their guards with fencedsql-schema -apply")
	}
	by := func(bit setting) string {
		for _, s := range settings {
			if s.bit != bit {
				continue
			}
			opt := fmt.Sprintf("%s(%v)", s.option, s.get(cfg))
			dsn := s.dsn
			if bit == setSchemaCheck || bit == setStrict {
				dsn += fmt.Sprintf("=%v", s.get(cfg))
			}
			switch {
			case cfg.fromBoth&bit != 0:
				return "the DSN parameter " + dsn + " and the option " + opt
			case cfg.fromDSN&bit != 0:
				return "the DSN parameter " + dsn
			default:
				return "the option " + opt
			}
		}
		return ""
	}
	if !cfg.schemaCheck {
		l.WarnContext(ctx, "fencedsql: the lazy schema and session checks are off: the guarded tables' fencing columns, declarations and side doors, and the session settings that decide whether a fenced write fails (MySQL/MariaDB sql_mode strictness, sql_log_bin, autocommit …), are not checked before guarded writes; only the settings that change how statements are read still are. Meant for mock drivers: never run so against a real database without the database-side guard",
			"turned_off_by", by(setSchemaCheck))
	}
	if cfg.allowDDL {
		l.WarnContext(ctx, "fencedsql: DDL naming a guarded table is allowed through the pool (ddl): a schema change can remove the fence, and the cached schema verdicts may not see it until they are re-checked",
			"turned_on_by", by(setDDL))
	}
	if cfg.allowDyn {
		l.WarnContext(ctx, "fencedsql: dynamic SQL is allowed through the pool (dynamic_sql): the SQL it runs is never seen by the wrapper, and only the database-side guard fences its writes",
			"turned_on_by", by(setDynamic))
	}
	if cfg.recheck < 0 {
		l.WarnContext(ctx, "fencedsql: the lazy schema check's verdicts are kept for the pool's life (WithSchemaRecheck with a negative bound, NeverRecheck): a schema changed while the pool runs is found only by pools opened later",
			"turned_off_by", fmt.Sprintf("the option WithSchemaRecheck(%v)", cfg.recheck))
	}
}
