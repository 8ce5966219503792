package main

import (
	"context"
	"strings"
	"testing"
)

// cleanTransfers is a correct transfer history on three accounts starting at 100:
// worker 0 moves 10 from 1 to 2 (tokens 1 and 2: the transaction carries 2), worker 1
// moves 5 from 3 to 1 (tokens 3, 4), worker 2 moves 20 from 2 to 3 (tokens 5, 6), and a
// late writer with token 2 was refused.
func cleanTransfers() ([]historyEntry, map[int64]int64, []attemptRecord) {
	hs := []historyEntry{
		{ID: 1, Account: 1, Worker: 0, Attempt: 1, Kind: "read", Token: 2, Read: 100},
		{ID: 2, Account: 2, Worker: 0, Attempt: 1, Kind: "read", Token: 2, Read: 100},
		{ID: 3, Account: 1, Worker: 0, Attempt: 1, Kind: "write", Token: 2, Read: 100, Written: 90},
		{ID: 4, Account: 2, Worker: 0, Attempt: 1, Kind: "write", Token: 2, Read: 100, Written: 110},
		{ID: 5, Account: 1, Worker: 1, Attempt: 1, Kind: "read", Token: 4, Read: 90},
		{ID: 6, Account: 3, Worker: 1, Attempt: 1, Kind: "read", Token: 4, Read: 100},
		{ID: 7, Account: 1, Worker: 1, Attempt: 1, Kind: "write", Token: 4, Read: 90, Written: 95},
		{ID: 8, Account: 3, Worker: 1, Attempt: 1, Kind: "write", Token: 4, Read: 100, Written: 95},
		{ID: 9, Account: 2, Worker: 2, Attempt: 1, Kind: "read", Token: 6, Read: 110},
		{ID: 10, Account: 3, Worker: 2, Attempt: 1, Kind: "read", Token: 6, Read: 95},
		{ID: 11, Account: 2, Worker: 2, Attempt: 1, Kind: "write", Token: 6, Read: 110, Written: 90},
		{ID: 12, Account: 3, Worker: 2, Attempt: 1, Kind: "write", Token: 6, Read: 95, Written: 115},
	}
	final := map[int64]int64{1: 95, 2: 90, 3: 115}
	attempts := []attemptRecord{
		{Worker: 0, Attempt: 1, Account: 1, To: 2, Amount: 10, Token: 2, Read: 100, Written: 90, Outcome: outCommitted},
		{Worker: 1, Attempt: 1, Account: 3, To: 1, Amount: 5, Token: 4, Read: 100, Written: 95, Outcome: outCommitted},
		{Worker: 2, Attempt: 1, Account: 2, To: 3, Amount: 20, Token: 6, Read: 110, Written: 90, Outcome: outCommitted},
		{Worker: 3, Attempt: 9, Account: 1, To: 2, Amount: 7, Token: 2, Read: 100, Written: 93, Outcome: outFenced},
	}
	return hs, final, attempts
}

func TestCheckTransfersClean(t *testing.T) {
	hs, final, attempts := cleanTransfers()
	c := checkTransfers(hs, final, attempts, 100)
	if !c.OK || c.Violations != 0 || c.HistoryWrites != 6 || c.Acknowledged != 3 {
		t.Fatalf("clean history judged %+v", c)
	}
	if !strings.Contains(c.summary(), "0 violations") {
		t.Errorf("summary: %s", c.summary())
	}
}

// TestCheckTransfersMutations: each mutation of the clean history is a bug the checker
// exists to catch, and it must name it.
func TestCheckTransfersMutations(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(hs []historyEntry, final map[int64]int64, attempts []attemptRecord) ([]historyEntry, []attemptRecord)
		want   func(c historyCheck) bool
	}{{
		// The late writer with token 2 committed after worker 1 and 2 moved on: it wrote
		// account 1 and 2 from its stale read (100, 100) -> (93, 107).
		name: "lost update by a late transfer",
		mutate: func(hs []historyEntry, final map[int64]int64, at []attemptRecord) ([]historyEntry, []attemptRecord) {
			hs = append(hs,
				historyEntry{ID: 13, Account: 1, Worker: 3, Attempt: 9, Kind: "write", Token: 2, Read: 100, Written: 93},
				historyEntry{ID: 14, Account: 2, Worker: 3, Attempt: 9, Kind: "write", Token: 2, Read: 100, Written: 107})
			final[1], final[2] = 93, 107
			at[3].Outcome = outCommitted
			return hs, at
		},
		want: func(c historyCheck) bool {
			return c.ConservationBroken == 1 && c.MoneyDrift == 15 && c.BrokenChains == 2 && c.TokenRegressions == 2 && c.StaleCommits == 2
		},
	}, {
		name: "broken chain with money conserved",
		mutate: func(hs []historyEntry, final map[int64]int64, at []attemptRecord) ([]historyEntry, []attemptRecord) {
			hs[6].Read = 91 // worker 1's entry on account 1 did not start from 90
			return hs, at
		},
		want: func(c historyCheck) bool { return c.BrokenChains == 1 && c.ConservationBroken == 0 },
	}, {
		name: "token going back",
		mutate: func(hs []historyEntry, final map[int64]int64, at []attemptRecord) ([]historyEntry, []attemptRecord) {
			hs[10].Token, hs[11].Token = 3, 3 // worker 2's transfer committed with a token below worker 1's
			hs[8].Token, hs[9].Token = 3, 3
			return hs, at
		},
		want: func(c historyCheck) bool { return c.TokenRegressions == 1 && c.BrokenChains == 0 },
	}, {
		name: "torn transfer",
		mutate: func(hs []historyEntry, final map[int64]int64, at []attemptRecord) ([]historyEntry, []attemptRecord) {
			hs = deleteEntry(hs, 11) // the credit of worker 2's transfer is missing
			final[3] = 95
			return hs, at
		},
		want: func(c historyCheck) bool { return c.TornTransfers == 1 && c.ConservationBroken == 1 },
	}, {
		name: "balance written outside the ledger",
		mutate: func(hs []historyEntry, final map[int64]int64, at []attemptRecord) ([]historyEntry, []attemptRecord) {
			final[1], final[2] = 96, 89
			return hs, at
		},
		want: func(c historyCheck) bool { return c.FinalMismatches == 2 && c.ConservationBroken == 0 },
	}, {
		name: "acknowledged transfer missing",
		mutate: func(hs []historyEntry, final map[int64]int64, at []attemptRecord) ([]historyEntry, []attemptRecord) {
			return hs, append(at, attemptRecord{Worker: 4, Attempt: 1, Account: 1, To: 3, Amount: 1, Token: 7, Outcome: outCommitted})
		},
		want: func(c historyCheck) bool { return c.MissingAcknowledged == 1 },
	}, {
		name: "refused transfer committed",
		mutate: func(hs []historyEntry, final map[int64]int64, at []attemptRecord) ([]historyEntry, []attemptRecord) {
			at[2].Outcome = outFenced
			return hs, at
		},
		want: func(c historyCheck) bool { return c.PhantomCommits == 1 },
	}} {
		t.Run(tc.name, func(t *testing.T) {
			hs, final, attempts := cleanTransfers()
			hs, attempts = tc.mutate(hs, final, attempts)
			c := checkTransfers(hs, final, attempts, 100)
			if c.OK || c.Violations == 0 || !tc.want(c) {
				t.Errorf("judged %+v", c)
			}
			if strings.Contains(c.summary(), "0 violations") || len(c.Examples) == 0 {
				t.Errorf("summary %q, examples %q", c.summary(), c.Examples)
			}
		})
	}
}

func deleteEntry(hs []historyEntry, i int) []historyEntry {
	return append(hs[:i:i], hs[i+1:]...)
}

// TestProcessModeTransfer runs the transfer workload in process mode on SQLite: the
// fenced run must be clean with every acknowledged transfer's two ledger entries in the
// history; the unfenced run is judged by the same checker (up to three seeds until it
// shows violations, as in TestProcessMode).
func TestProcessModeTransfer(t *testing.T) {
	t.Parallel()
	for seed := uint64(3); seed <= 5; seed++ {
		cfg := procConfig(seed)
		cfg.Workload, cfg.Accounts = workloadTransfer, 3
		rep := runProcDrill(t, cfg)
		u, f := rep.Unfenced, rep.Fenced
		if f.Check.Violations != 0 || f.FinalBalance != f.InitialBalance || f.InitialBalance != 3*transferInitial {
			t.Errorf("seed %d: fenced run: sum %d of %d: %s", seed, f.FinalBalance, f.InitialBalance, f.Check.summary())
		}
		if f.Check.Acknowledged != f.Committed || f.Check.HistoryWrites != 2*f.Committed || f.Committed == 0 {
			t.Errorf("seed %d: fenced run: %d committed, %d acknowledged, %d ledger entries", seed, f.Committed, f.Check.Acknowledged, f.Check.HistoryWrites)
		}
		if t.Failed() {
			return
		}
		if u.Check.Violations > 0 {
			if !rep.OK || !strings.Contains(rep.Verdict, "transfers") {
				t.Errorf("seed %d: verdict: %s", seed, rep.Verdict)
			}
			return
		}
		t.Logf("seed %d: the unfenced run broke nothing this time (%s); next seed", seed, u.Check.summary())
	}
	t.Errorf("in three runs the faults never broke the lock alone")
}

func TestTransferFlags(t *testing.T) {
	cfg, _, err := parseFlags([]string{"-procs", "8", "-workload", "transfer"}, &strings.Builder{})
	if err != nil || cfg.Workload != workloadTransfer || cfg.Accounts != 4 {
		t.Errorf("-workload transfer: %+v, %v", cfg, err)
	}
	for _, args := range [][]string{
		{"-workload", "transfer"},                                  // not process mode
		{"-procs", "4", "-workload", "transfer", "-accounts", "1"}, // needs two accounts
		{"-procs", "4", "-workload", "swap"},
		{"-procs", "4", "-workload", "transfer", "-mutate", "lost-update"},
	} {
		var stderr strings.Builder
		if code := realMain(context.Background(), args, &strings.Builder{}, &stderr, false); code != exitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", args, code, exitUsage, stderr.String())
		}
	}
}
