package secret

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Source names where a command reads a value holding a secret (a DSN with its password,
// a redis:// address): exactly one of the flag's own value (-dsn: on the command line,
// which every local user reads in ps and /proc/<pid>/cmdline), an environment variable
// (-dsn-env NAME: /proc/<pid>/environ is readable by the process's owner only) or a
// file (-dsn-file PATH, "-" for stdin). Red-team rt41b F1: the failover hooks put the
// owner account's password on fencedsql-schema's command line.
type Source struct {
	Flag  string // the flag's name, e.g. "dsn", for messages
	Value string // -dsn
	Env   string // -dsn-env: the variable's name
	File  string // -dsn-file: the file's path, "-" for stdin
}

// Read returns the value from the one source given, "" when none is. A file's value is
// its content without the trailing line break(s). The errors name the flag, the
// variable or the file, never the value; more than one source given, an unset or empty
// variable, an unreadable or empty file are errors, and so is a value, from any of the
// three, that is not one line (NotOneLine, ErrNotOneLine): a file or variable holding
// more than the DSN — an env file's PGPASSWORD=… line — would reach the driver, whose
// parse error quotes it whole (red-team rt45e F3). getenv and stdin are the
// environment and standard input (os.Getenv, os.Stdin in a command).
func (s Source) Read(getenv func(string) string, stdin io.Reader) (string, error) {
	given := 0
	for _, v := range []string{s.Value, s.Env, s.File} {
		if v != "" {
			given++
		}
	}
	switch {
	case given > 1:
		return "", fmt.Errorf("give only one of -%[1]s, -%[1]s-env and -%[1]s-file", s.Flag)
	case s.Env != "":
		v := getenv(s.Env)
		if v == "" {
			return "", fmt.Errorf("-%s-env: the environment variable %s is not set or empty", s.Flag, s.Env)
		}
		if err := NotOneLine(fmt.Sprintf("-%s-env: the environment variable %s", s.Flag, s.Env), v); err != nil {
			return "", err
		}
		return v, nil
	case s.File != "":
		var (
			b   []byte
			err error
		)
		if s.File == "-" {
			if stdin == nil {
				return "", errors.New("-" + s.Flag + "-file -: no standard input")
			}
			b, err = io.ReadAll(stdin)
		} else {
			b, err = os.ReadFile(s.File)
		}
		if err != nil {
			// The *PathError names the file and the failure, not its content.
			return "", fmt.Errorf("-%s-file: %w", s.Flag, err)
		}
		v := strings.TrimRight(string(b), "\r\n")
		if v == "" {
			return "", fmt.Errorf("-%s-file: %s is empty", s.Flag, s.File)
		}
		if err := NotOneLine(fmt.Sprintf("-%s-file: %s", s.Flag, s.File), v); err != nil {
			return "", err
		}
		return v, nil
	}
	if err := NotOneLine("-"+s.Flag, s.Value); err != nil {
		return "", err
	}
	return s.Value, nil
}
