package main

import (
	"cmp"
	"slices"
)

// checkTransfers is the checker of the transfer workload. Every account starts with
// initial; a committed transfer wrote two ledger entries (history rows of kind "write",
// one per account, its balance before in value_read and after in value_written) in the
// transaction that wrote the balances, and each claim wrote a "read" row. Per account the
// rows are in commit order (see history.go). A violation is any of:
//
//   - conservation_broken: the sum of the final balances differs from the sum of the
//     initial ones (money_drift says by how much): money was created or destroyed;
//   - broken_chains: a ledger entry whose balance before is not the balance after the
//     account's previous entry (initial for the first): a transfer committed on a stale
//     balance and overwrote the ones committed since (lost_updates counts them);
//   - final_mismatches: an account whose final balance is not its last entry's balance
//     after (a write outside the ledger);
//   - token_regressions: per account, an entry whose token is below the previous
//     entry's;
//   - stale_commits: an entry whose token is below one already committed on the
//     account by a claim (a read) or an entry;
//   - torn_transfers: a transfer whose ledger is not exactly two entries on two accounts
//     whose amounts cancel (money moved, not made);
//   - missing_acknowledged and phantom_commits: as for increments, transfers the worker
//     saw commit that are not in the ledger, and ones it saw refused that are.
func checkTransfers(history []historyEntry, final map[int64]int64, attempts []attemptRecord, initial int64) historyCheck {
	c := historyCheck{Workload: workloadTransfer, Accounts: len(final)}
	byAccount := map[int64][]historyEntry{}
	transfers := map[[2]int64][]historyEntry{}
	for _, h := range history {
		byAccount[h.Account] = append(byAccount[h.Account], h)
		if h.Kind == "write" {
			k := [2]int64{int64(h.Worker), h.Attempt}
			transfers[k] = append(transfers[k], h)
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
	var total int64
	for _, a := range accounts {
		hs := byAccount[a]
		slices.SortFunc(hs, func(x, y historyEntry) int { return cmp.Compare(x.ID, y.ID) })
		value := initial
		var lastWrite, newest uint64
		var newestKind string
		wrote := false
		for _, h := range hs {
			switch h.Kind {
			case "read":
				c.HistoryReads++
			case "write":
				c.HistoryWrites++
				if wrote && h.Token < lastWrite {
					c.TokenRegressions++
					c.flag("account %d: ledger entry #%d by worker-%d with token %d committed after one with token %d (tokens went backwards)",
						a, h.ID, h.Worker, h.Token, lastWrite)
				}
				if h.Token < newest {
					c.StaleCommits++
					c.flag("account %d: ledger entry #%d by worker-%d with token %d committed after a %s with the newer token %d",
						a, h.ID, h.Worker, h.Token, newestKind, newest)
				}
				if h.Read != value {
					c.BrokenChains++
					c.LostUpdates++
					c.flag("account %d: ledger entry #%d by worker-%d (token %d) moved the balance %d -> %d, but it was %d: the chain is broken",
						a, h.ID, h.Worker, h.Token, h.Read, h.Written, value)
				}
				value, lastWrite, wrote = h.Written, h.Token, true
			}
			if h.Token >= newest {
				newest, newestKind = h.Token, h.Kind
			}
		}
		f, ok := final[a]
		if !ok || f != value {
			c.FinalMismatches++
			c.flag("account %d: final balance %d, but its ledger ends at %d", a, f, value)
		}
		total += f
	}
	c.MoneyDrift = total - initial*int64(len(final))
	if c.MoneyDrift != 0 {
		c.ConservationBroken++
		c.flag("conservation: the balances add up to %d, they started at %d (%+d)", total, initial*int64(len(final)), c.MoneyDrift)
	}
	for k, es := range transfers {
		if len(es) != 2 || es[0].Account == es[1].Account || (es[0].Written-es[0].Read)+(es[1].Written-es[1].Read) != 0 {
			c.TornTransfers++
			c.flag("worker-%d transfer %d: %d ledger entries that do not move one amount between two accounts: %+v", k[0], k[1], len(es), es)
		}
	}
	for _, at := range attempts {
		c.Attempts++
		_, found := transfers[[2]int64{int64(at.Worker), at.Attempt}]
		switch at.Outcome {
		case outCommitted:
			c.Acknowledged++
			if !found {
				c.MissingAcknowledged++
				c.flag("worker-%d transfer %d (token %d, %d from account %d to %d) saw its commit, but it is not in the ledger",
					at.Worker, at.Attempt, at.Token, at.Amount, at.Account, at.To)
			}
		case outFenced, outRefused, outSkipped:
			if found {
				c.PhantomCommits++
				c.flag("worker-%d transfer %d (token %d, %d from account %d to %d) saw it %s, but it committed",
					at.Worker, at.Attempt, at.Token, at.Amount, at.Account, at.To, at.Outcome)
			}
		}
	}
	c.OK = c.Violations == 0
	return c
}
