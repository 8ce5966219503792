package main

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// errAddrUserInfo is -addr's refusal of a host:port address holding user information
// (user:password@host:port, :password@host:port): go-redis takes Options.Addr as a
// host and port, never reads credentials from it, and quotes it in its dial errors
// and its package logger's lines (red-team rt45e F1). Credentials go in a redis://
// URL, read off the command line with -addr-env or -addr-file.
var errAddrUserInfo = errors.New("-addr holds user information ('@') outside a URL: go-redis does not read credentials from host:port; give redis://user:password@host:port (or redis://:password@host:port), with -addr-env NAME or -addr-file PATH so that the password stays off the command line (the address is not shown: it may hold a password)")

// errAddrForm is -addr's refusal of an address that is neither host:port nor a URL.
var errAddrForm = errors.New("-addr is neither host:port (a numeric port) nor a redis:// or rediss:// URL (the address is not shown: it may hold a password)")

// errAddrURL is -addr's refusal of a URL go-redis cannot parse (its error quotes the URL).
var errAddrURL = errors.New("cannot parse the -addr URL (not shown: it may hold a password)")

// redisOptions reads -addr: a redis:// or rediss:// URL (redis.ParseURL: its password
// goes to Options.Password, which go-redis never prints), or host:port. Anything else
// is refused before a client is built, with an error that does not quote it: a
// host:port with '@' (errAddrUserInfo), one whose port is not a number or whose host
// holds a blank, '/', '?' or '#' (errAddrForm). go-redis would dial it and print it in
// its errors and on the process's stderr (its package logger), credentials included.
func redisOptions(addr string) (*redis.Options, error) {
	if strings.Contains(addr, "://") {
		o, err := redis.ParseURL(addr)
		if err != nil {
			return nil, errAddrURL
		}
		return o, nil
	}
	if strings.Contains(addr, "@") {
		return nil, errAddrUserInfo
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || strings.ContainsAny(host, " /?#") {
		return nil, errAddrForm
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return nil, errAddrForm
	}
	return &redis.Options{Addr: addr}, nil
}

// quietRedis is go-redis's package logger in this command (redis.SetLogger, from main):
// it drops every line. go-redis's default logger writes to the process's stderr,
// outside the command's masking of secrets (red-team rt45e F1: it printed an -addr
// with its password on a failed dial); every failure it would log also reaches the
// command as an error, which the command prints masked.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}
