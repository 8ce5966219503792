// Package etcdlock is the multi-machine lock service of lockclient: a Backend over etcd
// v3, the consensus-based store, through an existing *clientv3.Client.
//
//	cli, _ := clientv3.New(clientv3.Config{Endpoints: []string{"etcd-1:2379", "etcd-2:2379", "etcd-3:2379"}})
//	locks := lockclient.New(etcdlock.New(cli), lockclient.WithTTL(10*time.Second))
//
// # Sessions and leases
//
// Each lockclient session (one Client) owns one etcd lease, granted by Backend.Open, and
// every lock the session takes is a key attached to that lease. The session implements
// lockclient.SessionRenewer: the Client's watchdog renews the whole session with one
// KeepAliveOnce per renewal interval, however many locks it holds. etcd's background
// KeepAlive stream is deliberately not used: the watchdog must decide when to renew, see
// each failure, and measure the send time of each successful renewal (see the next section).
//
// If the session lease is gone when the session next takes a lock (it lapsed while the
// client held nothing, or etcd revoked it), the session grants a new one; locks of the old
// lease ended with it. If the client could still have trusted a lock of the old lease, the
// next RenewSession reports lockclient.ErrLeaseLost so that the client drops what it holds
// — also the locks taken on the new lease, which the Client then releases in the
// background (owner-checked), so their keys are not kept alive by later keep-alives.
//
// # Expiry is judged by the etcd leader
//
// A lock lives exactly as long as its session lease, and etcd expires a lease on the
// leader's clock, TTL after the leader received the last keep-alive. A new leader restarts
// the leases it inherits at their full TTL plus an election timeout (for TTLs shorter than
// etcd's lease-checkpoint interval, 5 minutes by default), so a failover only delays
// expiry. The Client declares a lease lost at the send time of its last successful
// renewal plus its TTL minus a safety margin, so it always gives up before etcd can expire
// the lease and grant the lock to someone else.
//
// etcd lease TTLs are whole seconds. The lease is granted with the session's TTL plus a
// slack (WithLeaseSlack, default 1s; see below) rounded UP to whole seconds (at least 1s; etcd may raise it further to its minimum, 1.5 election
// timeouts rounded up: 2s with the default 1s election timeout). The client keeps using the
// exact TTL it was configured with for its own deadlines, so rounding only makes etcd
// expire a lease later than the client gives up on it, which is the safe direction; the
// cost is that a crashed holder's locks are freed up to a second (or up to etcd's minimum
// TTL, plus the slack) later than the configured TTL. Prefer TTLs in whole seconds. The
// slack lets a TryAcquire within that long of the lease's last renewal skip the parallel
// keep-alive described below (it measured 1.12–1.15× concurrency.Mutex's latency with the
// keep-alive on every grant, 1.05× with the default slack).
//
// A grant must live TTL from the moment the service received the request (the contract of
// lockclient.Session.TryAcquire), but with one shared lease it lives only as long as the
// lease's remaining time. So TryAcquire also renews the session lease (one KeepAliveOnce,
// sent concurrently with the acquiring transaction) unless the remaining time, counted
// from the send time of the last successful grant or renewal, still covers a whole TTL
// from now; a grant whose renewal failed is deleted again and reported as ErrUnavailable.
//
// # Keys and the waiters' queue
//
// The lock named key lives under the etcd key prefix + PathEscape(key) + "/"; each
// session has at most one key there, prefix + PathEscape(key) + "/" + hex(lease ID) (the
// layout of etcd's concurrency.Mutex), attached to the session lease. The keys of a lock
// form its queue, in the order of their create revisions: the first is the holder (its
// value is the holder's owner name), the others wait (their value is "queued " + owner).
//
//   - Uncontended, TryAcquire is one transaction: if no key exists under the lock's
//     prefix, create ours. Otherwise it reports ErrHeld and leaves nothing behind: a bare
//     TryAcquire never queues.
//   - Acquire (the session implements lockclient.QueueSession) takes the lock in one
//     transaction if it is free, and otherwise, in the same transaction, puts our key at
//     the end of the queue and reads the key just before ours; it then watches only that
//     key, for delete events: a release or an expiry wakes exactly one waiter, not all of
//     them. When that key is gone, Wait reads whether ours was handed the lock (a read of
//     the member's local state suffices: a write to our key is a fact a stale read cannot
//     invent), else whether ours is first, and otherwise watches the new predecessor.
//     The watch starts at the current revision and, if the revision moved since the key
//     was read, one read checks that it did not go in between: a watch that starts in the
//     past is served by etcd's "unsynced" loop, which runs every 100ms, and would delay
//     the handoff (concurrency.Mutex watches that way, which shows in its waits).
//   - Release hands the lock over: the transaction that deletes the holder's key also
//     writes the next waiting key with its owner's name, conditioned on the holder's key
//     being still the grant and the waiter's unchanged. The next holder, woken by the
//     deletion, sees its key written and needs no transaction of its own. (Who is next is
//     read from the member's local state while the lock is held, or at the release; if
//     that answer is stale the compare fails and the release goes on alone. A session
//     that has not seen the lock contended releases with one delete, as without a queue:
//     a waiter that queued meanwhile is woken and takes the lock itself.)
//   - A TryAcquire of a lock this session recently waited for or handed over first asks
//     with a read (no write through consensus) whether it is free: under contention the
//     granting write would only find it taken.
//   - A waiter whose predecessor left without a hand-over (it expired, or left the queue)
//     takes the lock itself when it is first: one transaction writing its key,
//     conditioned on the key being unchanged and no key of the lock being older.
//   - A waiter whose context ends, or whose attempt fails (the Client then retries at the
//     end of the queue), leaves the queue at once: its key is deleted (compare-and-delete
//     on the mod revision it waited with, not the create revision: the same key may by
//     then carry a later attempt's grant, always a later write) and the waiter behind
//     it, watching that key, moves up; the holder's hand-over to it fails its compare
//     and the next waiter takes the lock itself. A key whose delete failed, or that was
//     written since (handed the lock before the delete), is an orphan (below). Client.Close
//     revokes the session lease, which removes every key of the session at once, and ends
//     its waits.
//   - While a session waits and holds nothing, the Client's watchdog renews nothing, so
//     the waiting key's lease is kept alive by Wait itself (a keep-alive every third of the
//     TTL); a key lost with its lease is found on the next read, and Wait starts over.
//
// Several callers of one Client waiting for the same lock share the session's one key
// (its place in line); the first of them to take the lock gets it, and the others queue
// again behind the others once it is released. Between clients the order is first come,
// first served.
//
// # Fencing tokens follow the revision of the grant
//
// A grant's token follows the revision of the write that granted the lock to our key
// (the creating put when the lock was free, the hand-over transaction, or the waiter's
// own claiming put — the key's mod revision), plus the floor offset (see Token floor). etcd's revision is one counter for the whole
// cluster, raised by every write and agreed by consensus, so a later grant of any lock
// always has a greater token, across keys, clients and leader changes: exactly the single
// increasing sequence that storage-side fencing needs. The key's create revision would
// not do: it is the time the waiter queued, not the time it was granted, and a waiter
// that queued on lock A before another client was granted the free lock B would get the
// smaller token for the later grant. Writing the key again at the grant costs nothing on
// a hand-over (the releasing transaction does it), and one transaction when the waiter
// must take the lock itself.
//
// # Token floor
//
// The token is that revision plus a floor offset: token = offset + revision, where the
// offset is the value (a decimal number, 0 when absent) of the key <prefix>~floor
// (Backend.FloorKey) as of the granting write's revision — read in the granting
// transaction itself, or, for a grant handed over by the releaser, at that revision. The
// offset only goes up, so tokens still increase with the revision, across keys and
// clients; with no floor key, the token is the revision. Backend.RaiseFloor
// (lockclient.FloorRaiser) raises the offset itself to at least a minimum by
// compare-and-swap, so that every later revision gives a token above it, and
// Backend.LastToken returns offset + current revision; WithMinToken raises it when the
// Backend opens its first session, and again whenever a grant finds it lower. etcd's own
// revision cannot be raised online (only by etcdutl snapshot restore --bump-revision),
// hence the offset.
//
// The floor key is part of the lock service's state: an operator must never delete it
// (tokens would fall back to bare revisions, below those the guarded database has seen;
// a lockclient.Client that was granted a higher token for the same lock name refuses
// the lower one, but a new process cannot tell), nor give several applications'
// backends the same prefix unless they share the floor. WithMinToken(n) seeds the
// offset (seed.go): a Backend with it prices grants only under an offset of at least n
// plus the clock of 2024-01-01 in microseconds, and sets a lower one — the floor key
// missing (a deleted prefix, or a cluster rebuilt from scratch, whose revision restarts
// at 1), written again lower after a loss (by a process configured lower, by a
// RaiseFloor, by hand), or n as an earlier release wrote it — to the clock in
// microseconds plus n, by compare-and-swap, only ever raising it; a grant that finds it
// so is given back and made again. Every token issued before the loss is below the seed
// as long as no offset above n + clock was ever written — give every process of the
// service the same WithMinToken, at least the value it was raised to at its switch —
// the etcd cluster made fewer than one write per microsecond on average since the
// previous seed, and the processes' clocks (etcd has none to read; the floor key records
// the seed, so one process's clock prices every grant) agree to within the time it
// lived (red-team rt45d F1, rt46d F1, rt49e F1). LastToken and Retire through it count
// with the seed likewise. A seed above 2^62 (n within the clock of it) fails with
// ErrInvalidConfig. RaiseFloor(min) records min itself (not min minus the revision) on
// an existing floor key, and the clock in microseconds plus min on a missing one (a
// fresh or lost prefix, a rebuilt cluster), so the same raise repeated after a loss
// puts the offset back at least where it was, and a rebuilt cluster above the clock
// seed of the lost one (red-team rt49e F1). Retire without WithMinToken on a prefix holding neither the floor key nor the
// service identity fails with ErrUnavailable instead of answering a bound below the
// tokens issued (red-team rt45d F2). A process without WithMinToken on a lost
// prefix grants bare revisions (the known-open rt28b form). A value of the floor key that
// is no offset ("1e9", text) makes every grant fail with an error wrapping
// lockclient.ErrInvalidConfig naming the key.
// Backend.Retire (lockclient.Retirer, lockfloor -retire: the first step of switching the
// application to another lock service) puts "retired:<offset + 2^52>" there
// (lockclient.RetirementMargin): every later grant fails with an error wrapping
// lockclient.ErrRetired, and so does RaiseFloor; LastToken answers the last token issued
// before the mark plus the margin, a bound that the cluster's revision stays below
// should the prefix be deleted (red-team rt44c F2). The service's identity
// (serviceid.go) is stored under the prefix too, in <prefix>~service-id.
// Rebuilding a cluster without WithMinToken in every process, restoring it from a
// snapshot (the floor key comes back with its seeded offset and an older revision: no
// seed), or moving the locks to another prefix or cluster, means raising the floor on the
// new one above the highest token the database has accepted (lockfloor -raise, or
// RaiseFloor) before the first grant. The Renew and Release checks
// below compare the key's mod revision with the grant's revision, which the Grant carries
// in its private Data, not with its token.
//
// Release deletes our key only if its mod revision is still the grant's revision
// (If(ModRevision(key) == revision).Then(Delete(key), ...)), never blindly: a holder whose
// lease expired cannot free the next holder's lock (G8 in docs/design.md). The answer tells
// apart "the lock is held by someone else now" (ErrNotOwner) from "the lease expired and
// nobody took the lock" (ErrLeaseLost).
//
// # Orphans
//
// A request whose answer was lost (a timeout, a cut connection, a context cancelled while
// the transaction was on its way) may still be applied by etcd afterwards, leaving a key
// of ours that no grant or waiting caller accounts for. Such keys are recorded and deleted
// promptly by a sweeper (at once, then with a growing pause, for as long as a late write
// may still land), not only at the next session renewal: a session that holds nothing
// renews nothing, and its orphan would otherwise block the lock until the lease expired.
// A TryAcquire that finds such a key of ours in its way deletes it and tries again.
//
// # Errors
//
// "Lease not found" answers (and a keep-alive answered with TTL <= 0) are ErrLeaseLost.
// Everything else — a deadline, a cancelled context, gRPC Unavailable, no leader, a
// connection that is cut — wraps lockclient.ErrUnavailable (and the context's error when it
// ended), and is never ErrHeld: a partitioned client learns that it cannot know, not that
// someone else holds the lock. Every request is also bounded by WithRequestTimeout, so a
// call made with a context without deadline does not hang on a black-holed connection.
//
// # Consensus is not fencing
//
// etcd makes the lock service itself correct: grants survive the loss of a minority of
// members, a partitioned member cannot grant anything, and tokens never go back. It cannot
// stop a holder that was paused (GC, swap, a stopped VM) past its lease from writing after
// waking up: by then etcd has rightly given the lock to someone else, and only the storage
// can refuse the late write. Pass Lease.Token to the database (package fencedsql) — a
// correct lock service still needs the database-side token check.
package etcdlock
