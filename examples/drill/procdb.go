package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// procStatements is the SQL of process mode: several accounts, and the history table
// written in the same transaction as each read and write.
type procStatements struct {
	stamp, read, update, record string
}

func newProcStatements(table string, b backend) procStatements {
	ph := func(n int) string {
		if b.numbered {
			return fmt.Sprintf("$%d", n)
		}
		return "?"
	}
	q := procStatements{
		read:   "SELECT balance FROM " + table + " WHERE id = " + ph(1),
		update: "UPDATE " + table + " SET balance = " + ph(1) + " WHERE id = " + ph(2),
		record: "INSERT INTO " + historyTable(table) + " (account, worker, attempt, kind, token, value_read, value_written) VALUES (" +
			ph(1) + ", " + ph(2) + ", " + ph(3) + ", " + ph(4) + ", " + ph(5) + ", " + ph(6) + ", " + ph(7) + ")",
	}
	if b.forUpdate {
		q.read += " FOR UPDATE" // through the fenced driver: a claim (see the package comment)
	} else {
		q.stamp = "UPDATE " + table + " SET balance = balance WHERE id = " + ph(1) // SQLite: the claim
	}
	return q
}

func historyTable(table string) string { return table + "_history" }

// procTables are the tables of one process-mode run, reached through the plain driver:
// accounts 1..n, each starting with the same balance, and the history.
type procTables struct {
	name, history string
	admin         *sql.DB
}

func setUpProcTables(ctx context.Context, in runInput, accounts int, initial int64) (*procTables, error) {
	admin, err := sql.Open(in.backend.raw, in.adminDSN)
	if err != nil {
		return nil, err
	}
	t := &procTables{name: in.cfg.Table, history: historyTable(in.cfg.Table), admin: admin}
	setupCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := admin.PingContext(setupCtx); err != nil {
		admin.Close()
		return nil, fmt.Errorf("connecting to the %s database: %w", in.cfg.Driver, err)
	}
	id := "id BIGSERIAL PRIMARY KEY"
	switch in.cfg.Driver {
	case "mysql":
		id = "id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY"
	case "sqlite":
		id = "id INTEGER PRIMARY KEY AUTOINCREMENT"
	}
	stmts := []string{
		"CREATE TABLE " + t.name + " (id BIGINT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL, " +
			"fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"CREATE TABLE " + t.history + " (" + id + ", account BIGINT NOT NULL, worker INT NOT NULL, attempt BIGINT NOT NULL, " +
			"kind VARCHAR(8) NOT NULL, token BIGINT NOT NULL, value_read BIGINT NOT NULL, value_written BIGINT)",
	}
	var values []string
	for a := 1; a <= accounts; a++ {
		values = append(values, fmt.Sprintf("(%d, %d)", a, initial))
	}
	stmts = append(stmts, "INSERT INTO "+t.name+" (id, balance) VALUES "+strings.Join(values, ", "))
	for i, s := range stmts {
		if _, err := admin.ExecContext(setupCtx, s); err != nil {
			if i > 0 {
				_ = t.drop(ctx)
			} else {
				admin.Close()
			}
			return nil, fmt.Errorf("creating the drill's tables %s and %s (the drill creates and drops its own tables: if one is left over "+
				"from an interrupted run, drop it or choose another -table): %w", t.name, t.history, err)
		}
	}
	return t, nil
}

// drop drops both tables, even once ctx is cancelled, and closes the connection.
func (t *procTables) drop(ctx context.Context) error {
	defer t.admin.Close()
	dropCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	var errs []error
	for _, tb := range []string{t.history, t.name} {
		if _, err := t.admin.ExecContext(dropCtx, "DROP TABLE IF EXISTS "+tb); err != nil {
			errs = append(errs, fmt.Errorf("dropping table %s: %w", tb, err))
		}
	}
	return errors.Join(errs...)
}

// plantLostUpdate is the checker's mutation test (-mutate lost-update): after the run it
// makes, through the plain driver, exactly the write a late writer would make — the
// second-to-last committed write on the busiest account is replayed (same token, same
// value read, same value written) as a new attempt of its worker, which "sees" it commit.
// The increments committed since are overwritten; the checker must say so.
func (t *procTables) plantLostUpdate(ctx context.Context, b backend, history []historyEntry) (attemptRecord, error) {
	counts := map[int64][]historyEntry{}
	var busiest int64
	for _, h := range history {
		if h.Kind == "write" {
			counts[h.Account] = append(counts[h.Account], h)
			if len(counts[h.Account]) > len(counts[busiest]) {
				busiest = h.Account
			}
		}
	}
	ws := counts[busiest]
	if len(ws) < 2 {
		return attemptRecord{}, errors.New("-mutate lost-update: fewer than two committed writes to replay")
	}
	old := ws[len(ws)-2]
	at := attemptRecord{Worker: old.Worker, Attempt: 1 << 40, Account: busiest, Token: old.Token,
		Read: old.Read, Written: old.Written, Outcome: outCommitted}
	q := newProcStatements(t.name, b)
	tx, err := t.admin.BeginTx(ctx, nil)
	if err != nil {
		return at, err
	}
	defer tx.Rollback() //nolint:errcheck
	if _, err := tx.ExecContext(ctx, q.update, at.Written, at.Account); err != nil {
		return at, err
	}
	if _, err := tx.ExecContext(ctx, q.record, at.Account, at.Worker, at.Attempt, "write", int64(at.Token), at.Read, at.Written); err != nil {
		return at, err
	}
	return at, tx.Commit()
}
