//go:build race

package mysqldriver_test

// raceEnabled: this test binary was built with -race, so the nested runs are too.
const raceEnabled = true
