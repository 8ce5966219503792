package fencedsql

import (
	"github.com/fencedsql/fencedsql/lockclient"
)

// The leases bound to one transaction (WithLeases, a nested WithLease, a statement's
// lease joining its transaction) must come from one lock service: the binding carries
// the largest of their tokens, which orders after every earlier holder of each lock
// only when all the tokens come from one counter. A token of one service stamped on the
// rows of another's lock would be compared there with that service's tokens: a
// meaningless order, which refuses the next honest holders or lets a stale one through
// (red-team rt42e F2). A Lease that names its service (lockclient.ServiceIdentifier)
// is compared with the others; two known, different names refuse the binding before
// anything is sent (checkLease, BeginTx). A lease that names none is not compared.

// leaseService returns the lock service l names, "" when it names none.
func leaseService(l Lease) string {
	if si, ok := l.(lockclient.ServiceIdentifier); ok && !isNilLease(l) {
		return si.ServiceID()
	}
	return ""
}

// leaseServices returns the first service that leases name ("" when none does), and
// a *LeaseServicesError when another one names a different service.
func leaseServices(leases []Lease) (string, error) {
	var first string
	var firstTok uint64
	for _, l := range leases {
		s := leaseService(l)
		switch {
		case s == "":
		case first == "":
			first, firstTok = s, l.Token()
		case s != first:
			return first, &LeaseServicesError{First: first, FirstToken: firstTok, Second: s, SecondToken: l.Token()}
		}
	}
	return first, nil
}

// otherService refuses leases naming service (a token tok of it) joining a
// transaction whose leases name tx (a token txTok of it), when both are known and
// differ; nil otherwise.
func otherService(tx string, txTok uint64, service string, tok uint64) error {
	if tx == "" || service == "" || tx == service {
		return nil
	}
	return &LeaseServicesError{First: tx, FirstToken: txTok, Second: service, SecondToken: tok}
}
