package main

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
)

// The checked history of process mode. Every transaction a worker commits on an
// account also inserts one row into <table>_history, in the same transaction: so a row
// is in the history if and only if its transaction committed. Two kinds:
//
//   - read:  the holder claimed the account and read its balance (value_read);
//   - write: the holder wrote value_written = value_read + 1.
//
// Rows are numbered by the database (identity / AUTO_INCREMENT / INTEGER PRIMARY KEY) at
// insert time, after the transaction's first statement locked the account's row (FOR
// UPDATE or UPDATE; SQLite locks the whole database at BEGIN IMMEDIATE), and the lock
// is held until commit: per account, the numbering is the commit order.
//
// Besides, each worker reports every attempt it made and the outcome it saw (committed,
// fenced, refused, error, skipped) to the coordinator. After the run, checkHistory
// compares the two and the final balances; see historyCheck for what it proves.

// historyEntry is one row of <table>_history.
type historyEntry struct {
	ID      int64  `json:"id"`
	Account int64  `json:"account"`
	Worker  int    `json:"worker"`
	Attempt int64  `json:"attempt"` // the worker's attempt number, shared by the round's read and write
	Kind    string `json:"kind"`    // "read" or "write"
	Token   uint64 `json:"token"`
	Read    int64  `json:"value_read"`
	Written int64  `json:"value_written"` // writes only
}

// Outcomes a worker reports for an attempt.
const (
	outCommitted = "committed" // Commit returned nil
	outFenced    = "fenced"    // fencedsql.ErrFenced: the database refused the write
	outRefused   = "refused"   // lockclient.ErrLeaseLost at Commit (-bind lease)
	outSkipped   = "skipped"   // the lease check before the write failed: no write sent
	outError     = "error"     // anything else: the outcome is unknown
)

// attemptRecord is a write attempt as the worker saw it.
type attemptRecord struct {
	Worker  int    `json:"worker"`
	Attempt int64  `json:"attempt"`
	Account int64  `json:"account"`
	Token   uint64 `json:"token"`
	Read    int64  `json:"value_read"`
	Written int64  `json:"value_written"`
	Outcome string `json:"outcome"`
	// Transfers: Account is debited Amount, To credited (Read, Written: Account's balance).
	To     int64 `json:"to,omitempty"`
	Amount int64 `json:"amount,omitempty"`
}

// historyCheck is the checker's verdict on one run. A violation is any of:
//
//   - token_regressions: per account, a committed write whose token is lower than the
//     previous committed write's (committed tokens must never decrease);
//   - stale_commits: a committed write whose token is older than one already committed
//     on the account, by a read (a newer holder's claim) or a write;
//   - stale_reads: a committed write computed from a value that was no longer the
//     account's balance when it committed (value_read != the previous write's
//     value_written): the increments in between were overwritten;
//   - final_mismatches: accounts whose final balance differs from the number of
//     committed writes on them (the increments); lost_updates sums the difference;
//   - missing_acknowledged: writes the worker saw commit that are not in the history;
//   - phantom_commits: writes in the history that the worker saw refused (fenced, or
//     refused at Commit) — a refusal the caller could mistake.
//
// The transfer workload's checker (checkTransfers) adds conservation_broken (with
// money_drift), broken_chains and torn_transfers; its history_writes are ledger entries.
type historyCheck struct {
	Workload            string   `json:"workload,omitempty"` // transfer; "": increment
	Accounts            int      `json:"accounts"`
	HistoryReads        int64    `json:"history_reads"`
	HistoryWrites       int64    `json:"history_writes"` // committed writes = committed increments
	Attempts            int64    `json:"attempts"`       // write attempts reported by the workers (skipped included)
	Acknowledged        int64    `json:"acknowledged"`   // ... whose Commit returned nil
	TokenRegressions    int64    `json:"token_regressions"`
	StaleCommits        int64    `json:"stale_commits"`
	StaleReads          int64    `json:"stale_reads"`
	FinalMismatches     int64    `json:"final_mismatches"`
	LostUpdates         int64    `json:"lost_updates"`
	MissingAcknowledged int64    `json:"missing_acknowledged"`
	PhantomCommits      int64    `json:"phantom_commits"`
	ConservationBroken  int64    `json:"conservation_broken,omitempty"` // transfer: 1 if the sum of balances changed
	MoneyDrift          int64    `json:"money_drift,omitempty"`         // transfer: final sum - initial sum
	BrokenChains        int64    `json:"broken_chains,omitempty"`       // transfer: ledger entries not chained from the previous balance
	TornTransfers       int64    `json:"torn_transfers,omitempty"`      // transfer: ledgers that are not one amount moved between two accounts
	Violations          int64    `json:"violations"`
	OK                  bool     `json:"ok"`
	Examples            []string `json:"examples,omitempty"` // the first few violations, in words
}

const maxExamples = 5

func (c *historyCheck) flag(format string, args ...any) {
	c.Violations++
	if len(c.Examples) < maxExamples {
		c.Examples = append(c.Examples, fmt.Sprintf(format, args...))
	}
}

// checkHistory checks the history against the final balances (account -> balance) and
// the attempts the workers reported.
func checkHistory(history []historyEntry, final map[int64]int64, attempts []attemptRecord) historyCheck {
	var c historyCheck
	c.Accounts = len(final)
	byAccount := map[int64][]historyEntry{}
	inHistory := map[[2]int64]historyEntry{}
	for _, h := range history {
		byAccount[h.Account] = append(byAccount[h.Account], h)
		if h.Kind == "write" {
			inHistory[[2]int64{int64(h.Worker), h.Attempt}] = h
		}
	}
	accounts := make([]int64, 0, len(final))
	for a := range final {
		accounts = append(accounts, a)
	}
	for a := range byAccount {
		if _, ok := final[a]; !ok {
			accounts = append(accounts, a)
		}
	}
	slices.Sort(accounts)
	for _, a := range accounts {
		hs := byAccount[a]
		slices.SortFunc(hs, func(x, y historyEntry) int { return cmp.Compare(x.ID, y.ID) })
		var (
			value        int64  // the balance after the committed writes so far
			lastWrite    uint64 // token of the previous committed write
			newest       uint64 // greatest token committed so far (read or write)
			newestKind   string
			increments   int64
			wroteAlready bool
		)
		for _, h := range hs {
			switch h.Kind {
			case "read":
				c.HistoryReads++
			case "write":
				c.HistoryWrites++
				increments++
				if wroteAlready && h.Token < lastWrite {
					c.TokenRegressions++
					c.flag("account %d: write #%d by worker-%d with token %d committed after a write with token %d (tokens went backwards)",
						a, h.ID, h.Worker, h.Token, lastWrite)
				}
				if h.Token < newest {
					c.StaleCommits++
					c.flag("account %d: write #%d by worker-%d with token %d committed after a %s with the newer token %d",
						a, h.ID, h.Worker, h.Token, newestKind, newest)
				}
				if h.Read != value {
					c.StaleReads++
					c.flag("account %d: write #%d by worker-%d (token %d) wrote %d computed from %d, but the balance was %d: %d increment(s) overwritten",
						a, h.ID, h.Worker, h.Token, h.Written, h.Read, value, value-h.Read)
				}
				value, lastWrite, wroteAlready = h.Written, h.Token, true
			}
			if h.Token >= newest {
				newest, newestKind = h.Token, h.Kind
			}
		}
		if f, ok := final[a]; !ok || f != increments {
			c.FinalMismatches++
			c.LostUpdates += increments - f
			c.flag("account %d: final balance %d, but %d increments committed", a, f, increments)
		}
	}
	for _, at := range attempts {
		c.Attempts++
		_, found := inHistory[[2]int64{int64(at.Worker), at.Attempt}]
		switch at.Outcome {
		case outCommitted:
			c.Acknowledged++
			if !found {
				c.MissingAcknowledged++
				c.flag("worker-%d attempt %d (token %d, account %d) saw its write commit, but it is not in the history",
					at.Worker, at.Attempt, at.Token, at.Account)
			}
		case outFenced, outRefused, outSkipped:
			if found {
				c.PhantomCommits++
				c.flag("worker-%d attempt %d (token %d, account %d) saw its write %s, but it committed",
					at.Worker, at.Attempt, at.Token, at.Account, at.Outcome)
			}
		}
	}
	c.OK = c.Violations == 0
	return c
}

// summary is the checker's verdict in one line.
func (c historyCheck) summary() string {
	if c.OK && c.Workload == workloadTransfer {
		return fmt.Sprintf("ledger checked: %d entries (%d transfers) and %d claims on %d accounts, %d acknowledged transfers all in the ledger, "+
			"every account's chain unbroken, tokens never went backwards, the balances add up: 0 violations",
			c.HistoryWrites, c.HistoryWrites/2, c.HistoryReads, c.Accounts, c.Acknowledged)
	}
	if c.OK {
		return fmt.Sprintf("history checked: %d committed writes and %d reads on %d account(s), %d acknowledged writes all in the history, "+
			"tokens never went backwards, final balances == committed increments: 0 violations",
			c.HistoryWrites, c.HistoryReads, c.Accounts, c.Acknowledged)
	}
	var parts []string
	for _, p := range []struct {
		n    int64
		what string
	}{
		{c.TokenRegressions, "token regressions"}, {c.StaleCommits, "stale commits"}, {c.StaleReads, "stale reads"},
		{c.FinalMismatches, "final-balance mismatches"}, {c.MissingAcknowledged, "acknowledged writes missing"},
		{c.PhantomCommits, "phantom commits"}, {c.ConservationBroken, fmt.Sprintf("conservation broken (%+d)", c.MoneyDrift)},
		{c.BrokenChains, "broken ledger chains"}, {c.TornTransfers, "torn transfers"},
	} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
		}
	}
	return fmt.Sprintf("history checked: %d VIOLATIONS (%s; %d updates lost)", c.Violations, strings.Join(parts, ", "), c.LostUpdates)
}

// readHistory reads the history and the final balances through the plain driver.
func (t *procTables) readHistory(ctx context.Context) ([]historyEntry, map[int64]int64, error) {
	rows, err := t.admin.QueryContext(ctx, "SELECT id, account, worker, attempt, kind, token, value_read, value_written FROM "+
		t.history+" ORDER BY id")
	if err != nil {
		return nil, nil, fmt.Errorf("reading the history: %w", err)
	}
	defer rows.Close()
	var hs []historyEntry
	for rows.Next() {
		var h historyEntry
		var tok int64
		var written sql.NullInt64
		if err := rows.Scan(&h.ID, &h.Account, &h.Worker, &h.Attempt, &h.Kind, &tok, &h.Read, &written); err != nil {
			return nil, nil, fmt.Errorf("reading the history: %w", err)
		}
		h.Token, h.Written = uint64(tok), written.Int64
		hs = append(hs, h)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("reading the history: %w", err)
	}
	final := map[int64]int64{}
	brows, err := t.admin.QueryContext(ctx, "SELECT id, balance FROM "+t.name)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the final balances: %w", err)
	}
	defer brows.Close()
	for brows.Next() {
		var id, bal int64
		if err := brows.Scan(&id, &bal); err != nil {
			return nil, nil, err
		}
		final[id] = bal
	}
	return hs, final, brows.Err()
}
