package main

import (
	"fmt"
	"strconv"
)

// decimalToken is the value of -raise-floor: a fencing token written in decimal, as
// every tool of the failover and switch procedures prints it (lockfloor -show,
// -max-token). Leading zeros are decimal digits (0000001000 is 1000); no base prefix
// (0x, 0o, 0b) and no digit separator (_) is accepted. flag.Uint64 read a zero-padded
// number as octal and raised the floor below the one asked (red-team rt37c F1).
type decimalToken uint64

func (d *decimalToken) String() string { return strconv.FormatUint(uint64(*d), 10) }

func (d *decimalToken) Set(s string) error {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return fmt.Errorf("not a decimal token (digits 0-9 only, at most %d)", uint64(1<<64-1))
	}
	*d = decimalToken(n)
	return nil
}
