//go:build !race

package mysqldriver_test

const raceEnabled = false
