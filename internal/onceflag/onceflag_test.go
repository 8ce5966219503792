package onceflag

import (
	"bytes"
	"errors"
	"flag"
	"strconv"
	"strings"
	"testing"
)

// highest is a repeatable Value whose highest occurrence counts (as lockfloor's
// -at-least).
type highest uint64

func (h *highest) String() string { return strconv.FormatUint(uint64(*h), 10) }
func (h *highest) Set(s string) error {
	n, err := strconv.ParseUint(s, 10, 64)
	if err == nil && highest(n) > *h {
		*h = highest(n)
	}
	return err
}

func newSet() (*flag.FlagSet, *bytes.Buffer, *string, *bool, *bool, *highest) {
	var out bytes.Buffer
	fs := flag.NewFlagSet("cmd", flag.ContinueOnError)
	fs.SetOutput(&out)
	s := fs.String("dsn", "", "a `DSN`")
	b := fs.Bool("apply", false, "apply")
	t := fs.Bool("tombstones", true, "tombstones")
	var h highest
	fs.Var(&h, "at-least", "repeatable")
	return fs, &out, s, b, t, &h
}

// TestParseRefusesRepeatedFlags: every flag given twice — a value flag in either form,
// a bool flag in any form — is a *RepeatedError naming it, printed with the usage, the
// second value never set nor printed (red-team rt62c F2).
func TestParseRefusesRepeatedFlags(t *testing.T) {
	const secret = "postgres://u:S3cr3t@h/db"
	for _, c := range []struct {
		args []string
		name string // the first flag repeated
	}{
		{[]string{"-dsn", "a", "-dsn", secret}, "dsn"},
		{[]string{"-dsn=a", "--dsn=" + secret}, "dsn"},
		{[]string{"-apply", "-apply"}, "apply"},
		{[]string{"-apply", "-apply=false"}, "apply"},
		{[]string{"-tombstones=false", "-tombstones"}, "tombstones"},
		{[]string{"-dsn", "a", "-at-least", "1", "-dsn", secret, "-apply", "-apply"}, "dsn"},
	} {
		args, name := c.args, c.name
		fs, out, dsn, _, _, _ := newSet()
		err := Parse(fs, args, "at-least")
		var re *RepeatedError
		if !errors.As(err, &re) {
			t.Errorf("Parse(%q) = %v, want a *RepeatedError", args, err)
			continue
		}
		if re.Name != name {
			t.Errorf("Parse(%q): repeated %q, want %q", args, re.Name, name)
		}
		if !strings.Contains(out.String(), "flag -"+re.Name+" given more than once") || !strings.Contains(out.String(), "Usage of cmd") {
			t.Errorf("Parse(%q) printed %q, want the refusal and the usage", args, out.String())
		}
		if strings.Contains(out.String(), "S3cr3t") || *dsn == secret {
			t.Errorf("Parse(%q): the repeated value was set or printed: -dsn %q, output %q", args, *dsn, out.String())
		}
		// The usage shows the flags' own Values after Parse: "-dsn DSN", "(default true)".
		if !strings.Contains(out.String(), "-dsn DSN") || strings.Contains(out.String(), "panic") {
			t.Errorf("Parse(%q): usage %q does not show the flags' own Values", args, out.String())
		}
	}
}

// TestParseKeepsOnceAndRepeatable: flags given once parse as fs.Parse parses them (bool
// flags without a value, the rest after them), and a repeatable flag keeps its Value's
// rule.
func TestParseKeepsOnceAndRepeatable(t *testing.T) {
	fs, out, dsn, apply, tomb, h := newSet()
	if err := Parse(fs, []string{"-apply", "-tombstones=false", "-at-least", "7", "-dsn", "x", "-at-least", "9", "-at-least", "3", "rest"}, "at-least"); err != nil {
		t.Fatalf("Parse: %v (%s)", err, out)
	}
	if !*apply || *tomb || *dsn != "x" || *h != 9 || fs.NArg() != 1 || fs.Arg(0) != "rest" {
		t.Errorf("Parse: -apply %v -tombstones %v -dsn %q -at-least %d args %q; want true false x 9 [rest]", *apply, *tomb, *dsn, *h, fs.Args())
	}
	fs.VisitAll(func(f *flag.Flag) {
		if _, wrapped := f.Value.(*once); wrapped {
			t.Errorf("-%s still wrapped after Parse", f.Name)
		}
	})
	// fs.Parse's own errors come back as they are, the usage with the flags' own Values.
	fs, out, _, _, _, _ = newSet()
	if err := Parse(fs, []string{"-nope"}); err == nil || errors.As(err, new(*RepeatedError)) {
		t.Errorf("Parse(-nope) = %v, want flag's error", err)
	}
	if !strings.Contains(out.String(), "-dsn DSN") {
		t.Errorf("usage %q", out.String())
	}
	fs, _, _, _, _, _ = newSet()
	if err := Parse(fs, []string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("Parse(-h) = %v, want flag.ErrHelp", err)
	}
}
