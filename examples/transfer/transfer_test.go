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

func TestTransfer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, &out, config{TTL: 100 * time.Millisecond}); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	got := out.String()
	t.Log("\n" + got)
	for _, want := range []string{
		"A  acquires account:42: fencing token 7",
		"A  reads balance 100",
		"B  acquires account:42: fencing token 8",
		"writes 80 (deducting 20) with token 8: committed",
		"writes balance 70 with token 7",
		"refused by the database: fencedsql: write to accounts with token 7 fenced",
		"final balance 80 (fence_token 8, version 1)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q", want)
		}
	}

	// The output is deterministic: a second run prints the same story (with the TTL).
	var again bytes.Buffer
	if err := run(ctx, &again, config{TTL: 100 * time.Millisecond}); err != nil {
		t.Fatalf("second run: %v", err)
	}
	if again.String() != got {
		t.Errorf("output differs between runs:\n%s\n---\n%s", got, again.String())
	}
}
