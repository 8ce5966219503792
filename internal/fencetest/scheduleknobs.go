package fencetest

import (
	"database/sql"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// ScheduleKnobs are the environment knobs the randomized schedule tests share
// (dialects/*/schedules_random_test.go, fencedpgx's sequences, dialects/sqlite's
// generated statements, generated_sql_test.go): the default run is
// short and time-bounded for CI, the long form is asked for by the environment.
type ScheduleKnobs struct {
	// Seed is FENCEDSQL_SCHEDULES_SEED (SeedSet) or, when unset, the given default.
	Seed    int64
	SeedSet bool
	// Iters is FENCEDSQL_SCHEDULES_ITERS (ItersSet: the test then runs that many
	// schedules with no time budget) or, when unset, the given default.
	Iters    int
	ItersSet bool
	// ShowLog is FENCEDSQL_SCHEDULES_LOG=1: log every schedule's trace, not only a
	// failing one's.
	ShowLog bool
}

// ReadScheduleKnobs reads the knobs, with seed and iters as the defaults; a knob that
// does not parse fails the test.
func ReadScheduleKnobs(t testing.TB, seed int64, iters int) ScheduleKnobs {
	t.Helper()
	k := ScheduleKnobs{Seed: seed, Iters: iters, ShowLog: os.Getenv("FENCEDSQL_SCHEDULES_LOG") == "1"}
	if s := os.Getenv("FENCEDSQL_SCHEDULES_SEED"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("FENCEDSQL_SCHEDULES_SEED=%q: %v", s, err)
		}
		k.Seed, k.SeedSet = n, true
	}
	if s := os.Getenv("FENCEDSQL_SCHEDULES_ITERS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("FENCEDSQL_SCHEDULES_ITERS=%q: want a positive number", s)
		}
		k.Iters, k.ItersSet = n, true
	}
	return k
}

// ReadScheduleIso reads FENCEDSQL_SCHEDULES_ISO, one of levels' names (RC, RR, …):
// the isolation level every schedule then runs under; ok is false when it is unset. A
// name not in levels fails the test.
func ReadScheduleIso(t testing.TB, levels map[string]sql.IsolationLevel) (level sql.IsolationLevel, ok bool) {
	t.Helper()
	s := os.Getenv("FENCEDSQL_SCHEDULES_ISO")
	if s == "" {
		return 0, false
	}
	l, ok := levels[strings.ToUpper(s)]
	if !ok {
		names := make([]string, 0, len(levels))
		for n := range levels {
			names = append(names, n)
		}
		sort.Strings(names)
		t.Fatalf("FENCEDSQL_SCHEDULES_ISO=%q: want one of %s", s, strings.Join(names, ", "))
	}
	return l, true
}
