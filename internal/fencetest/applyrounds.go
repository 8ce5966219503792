package fencetest

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
)

// ApplyRounds does what fencedsql-schema -apply does: RegisterTables of specs (when
// any are given), then Check and every Fix statement it reports, up to three rounds,
// until a Check reports no Fix; it returns the last reports (with no specs, the tables
// the database records). inTx runs each round's statements in one READ COMMITTED
// transaction, as -apply does on PostgreSQL; otherwise each runs alone, as on
// MySQL/MariaDB, whose DDL commits by itself. A failed statement ends it with an error
// quoting the statement.
func ApplyRounds(ctx context.Context, raw *sql.DB, d dialect.Dialect, inTx bool, specs ...schema.GuardSpec) ([]schema.TableReport, error) {
	if len(specs) > 0 {
		if err := schema.RegisterTables(ctx, raw, d, specs...); err != nil {
			return nil, err
		}
	}
	var reps []schema.TableReport
	for round := 0; round < 3; round++ {
		var err error
		if reps, err = schema.Check(ctx, raw, d, specs...); err != nil {
			return reps, err
		}
		var fix []string
		for _, r := range reps {
			fix = append(fix, r.Fix...)
		}
		if len(fix) == 0 {
			return reps, nil
		}
		if err := runFix(ctx, raw, inTx, fix); err != nil {
			return reps, err
		}
	}
	return reps, nil
}

// runFix runs one round's Fix statements (ApplyRounds).
func runFix(ctx context.Context, raw *sql.DB, inTx bool, fix []string) error {
	if !inTx {
		for _, s := range fix {
			if _, err := raw.ExecContext(ctx, s); err != nil {
				return fmt.Errorf("fix %q: %w", s, err)
			}
		}
		return nil
	}
	tx, err := raw.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return err
	}
	for _, s := range fix {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			tx.Rollback()
			return fmt.Errorf("fix %q: %w", s, err)
		}
	}
	return tx.Commit()
}

// ReportProblems lists the reports' problems as "table: problem"; none when every
// table is fit for fencing.
func ReportProblems(reps []schema.TableReport) []string {
	var out []string
	for _, r := range reps {
		for _, p := range r.Problems {
			out = append(out, r.Table+": "+p)
		}
	}
	return out
}
