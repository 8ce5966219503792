// Package onceflag parses a command's flags so that each is given at most once: Go's
// flag package lets a second occurrence silently replace the first, and a command that
// raises a token floor or installs guards (lockfloor, fencedsql-schema) then acts on the
// value given last — `-raise N -raise 5` raises to 5, `-prefix app: -prefix other:`
// reads another service, `-tables a -tables b -apply` guards b only — and reports
// success (red-team rt62c F2; design.md G13: a repeated parameter is an error, never a
// silently unguarded table). It is the commands' counterpart of the DSN reader's
// refusal of a repeated fenced_* parameter.
package onceflag

import (
	"flag"
	"fmt"
	"os"
	"slices"
)

// RepeatedError reports a flag given more than once that is not declared repeatable.
type RepeatedError struct {
	Name string // the flag's name, without the dash
}

func (e *RepeatedError) Error() string {
	return fmt.Sprintf("flag -%s given more than once: give each flag once (a later value would silently replace the first)", e.Name)
}

// Parse parses args with fs as fs.Parse does, except that every flag of fs not named in
// repeatable may be given only once: a second occurrence — of a value flag (-raise N),
// or of a bool flag in any form (-apply, -apply=true, -tombstones=false) — is a usage
// error. Parse then prints "flag -NAME given more than once…" and fs's usage to
// fs.Output(), as fs.Parse prints its own errors, and returns a *RepeatedError naming
// the first repeated flag (with flag.ExitOnError it exits with status 2, with
// flag.PanicOnError it panics, as fs.Parse does). The repeated value is never set, and
// never printed: it may be a DSN holding a password. The flags named in repeatable
// keep their Value's own rule (lockfloor's -at-least: the highest counts). fs.Parse's
// own errors are returned as they are. Bool flags keep parsing as bool flags (the
// wrapper forwards IsBoolFlag), and fs's flags and Usage are as before once Parse
// returns: the usage it prints shows the flags' own types and defaults.
func Parse(fs *flag.FlagSet, args []string, repeatable ...string) error {
	var repeated *RepeatedError
	orig := map[string]flag.Value{}
	fs.VisitAll(func(f *flag.Flag) {
		if slices.Contains(repeatable, f.Name) {
			return
		}
		orig[f.Name] = f.Value
		f.Value = &once{Value: f.Value, repeat: func() {
			if repeated == nil {
				repeated = &RepeatedError{Name: f.Name}
			}
		}}
	})
	restore := func() {
		fs.VisitAll(func(f *flag.Flag) {
			if v, ok := orig[f.Name]; ok {
				f.Value = v
			}
		})
	}
	defer restore()
	usage := fs.Usage
	defer func() { fs.Usage = usage }()
	printUsage := func() {
		restore() // the usage shows the flags' own Values
		if usage != nil {
			usage()
			return
		}
		if fs.Name() == "" {
			fmt.Fprintf(fs.Output(), "Usage:\n")
		} else {
			fmt.Fprintf(fs.Output(), "Usage of %s:\n", fs.Name())
		}
		fs.PrintDefaults()
	}
	fs.Usage = printUsage
	if err := fs.Parse(args); err != nil || repeated == nil {
		return err
	}
	fmt.Fprintln(fs.Output(), repeated.Error())
	printUsage()
	switch fs.ErrorHandling() {
	case flag.ExitOnError:
		os.Exit(2)
	case flag.PanicOnError:
		panic(repeated)
	}
	return repeated
}

// once is a flag's Value that takes its first occurrence only: a second one is
// reported (repeat) and not set.
type once struct {
	flag.Value
	seen   bool
	repeat func()
}

func (o *once) Set(s string) error {
	if o.seen {
		o.repeat()
		return nil
	}
	o.seen = true
	return o.Value.Set(s)
}

// IsBoolFlag forwards the wrapped Value's: flag parses -apply without a value only for
// a Value that says it is a bool flag.
func (o *once) IsBoolFlag() bool {
	b, ok := o.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// String is safe on the zero once (flag.PrintDefaults builds one to tell a default).
func (o *once) String() string {
	if o == nil || o.Value == nil {
		return ""
	}
	return o.Value.String()
}
