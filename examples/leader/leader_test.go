package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestLeader(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, &out, config{TTL: 100 * time.Millisecond}); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	got := out.String()
	t.Log("\n" + got)
	for _, want := range []string{
		"node-1  campaigns: wins, leader for term 1",
		"node-2  campaigns: the lock is held, stays a follower",
		"node-1  sets max_connections = 100 (term 1): committed",
		"node-2  wins the election once node-1's lease expires at the lock service: term 2",
		"node-3  campaigns: the lock is held, stays a follower",
		"node-2  sets max_connections = 200 (term 2): committed",
		"refused by the database: fencedsql: write to cluster_state with token 1 fenced",
		"cluster_state: leader node-2, term 2, max_connections 200, fence_token 2",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	var again bytes.Buffer
	if err := run(ctx, &again, config{TTL: 100 * time.Millisecond}); err != nil {
		t.Fatalf("second run: %v", err)
	}
	if again.String() != got {
		t.Errorf("output differs between runs:\n%s\n---\n%s", got, again.String())
	}
}
