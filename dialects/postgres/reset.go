package postgres

import (
	"database/sql/driver"
	"reflect"
	"runtime"
	"strings"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/internal/unwrap"
)

// ResetKeepsSession implements dialect.ResetJudge: pgx's stdlib connection runs, on
// reuse, the connector's OptionResetSession hook, which may set search_path or
// synchronous_commit unseen (red-team rt44b F3). Without one pgx runs its own no-op,
// a function of its stdlib package: then, and only then, the session is kept and the
// wrapper re-arms nothing. pgx gives no accessor for the hook, so its unexported
// field is read (by reflection, without calling it); a pgx whose connection has no
// such field, any other driver, or a hook of anyone else's answers false: the
// wrapper re-reads the session before the next guarded write.
//
// raw is pgx's connection itself, or one under wrapper layers that expose it with a
// Raw() driver.Conn method; each such layer runs its own ResetSession first, which
// may move the session as pgx's hook would (a tenancy layer setting the checkout's
// search_path, a layer that reconnects and exposes the new connection: red-team rt45c
// F5). So the session is judged kept only when every layer is a known forwarder
// (unwrap.ConnForwarded: otelsql's); any other layer answers false.
func (dialectImpl) ResetKeepsSession(raw driver.Conn) bool {
	bottom, forwarded := unwrap.ConnForwarded(raw)
	c, _ := bottom.(*stdlib.Conn)
	if !forwarded || c == nil {
		return false
	}
	f := reflect.ValueOf(c).Elem().FieldByName("resetSessionFunc")
	if !f.IsValid() || f.Kind() != reflect.Func || f.IsNil() {
		return false
	}
	fn := runtime.FuncForPC(f.Pointer())
	return fn != nil && strings.HasPrefix(fn.Name(), pgxStdlibPrefix)
}

// pgxStdlibPrefix is the prefix of the names of pgx's stdlib package's functions
// (its no-op reset hooks among them).
const pgxStdlibPrefix = "github.com/jackc/pgx/v5/stdlib."

var _ dialect.ResetJudge = dialectImpl{}
