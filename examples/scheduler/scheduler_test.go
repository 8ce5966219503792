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

func TestScheduler(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, &out, config{TTL: 100 * time.Millisecond}); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	got := out.String()
	t.Log("\n" + got)
	for _, want := range []string{
		"scheduler-1  dispatches invoice-batch with token 1",
		"scheduler-2  finds invoice-batch not done and dispatches it again with token 2",
		"worker-a  runs invoice-batch (dispatched by scheduler-1, token 1)\n          refused by the database (ErrFenced)",
		"worker-b  runs invoice-batch (dispatched by scheduler-2, token 2)\n          committed",
		"worker-c  runs invoice-batch (dispatched by scheduler-2, token 2)\n          refused by the database (ErrDuplicate",
		"job_runs.run_id", // the constraint, named by the DuplicateError
		"job_runs: 1 row (run invoice-batch@2025-06-30 by worker-b with token 2); jobs: invoice-batch done, fence_token 2",
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
