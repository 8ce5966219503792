package fencedsql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"slices"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// Register wraps d and registers it with database/sql under name. Registering a name
// that is already registered does nothing (two packages' tests may both import a
// dialect), so it never panics the way sql.Register does.
func Register(name string, d driver.Driver, opts ...Option) {
	if slices.Contains(sql.Drivers(), name) {
		return
	}
	sql.Register(name, Wrap(d, opts...))
}

// Wrap returns a driver that fences writes to guarded tables and delegates everything
// else to d. The DSN given to sql.Open may add this package's parameters (see
// ParamTables); they are removed before the DSN reaches d.
func Wrap(d driver.Driver, opts ...Option) driver.Driver {
	return &wrappedDriver{raw: d, opts: opts}
}

// OpenDB opens a database over any connector (for example one built by a driver's own
// API, or DSNConnector over go-sqlmock's driver) with fencing applied. A configuration
// error is reported by every use of the returned DB.
func OpenDB(c driver.Connector, opts ...Option) *sql.DB {
	core, err := newCore(opts)
	if err != nil {
		return sql.OpenDB(errConnector{err: err, drv: c.Driver()})
	}
	core.raw = c
	return sql.OpenDB(&connector{raw: c, core: core, drv: &wrappedDriver{raw: c.Driver(), opts: opts}})
}

// DSNConnector returns a connector that opens d with dsn, for drivers that do not
// implement driver.DriverContext (go-sqlmock, for one):
//
//	mockDB, mock, _ := sqlmock.NewWithDSN("test")
//	db := fencedsql.OpenDB(fencedsql.DSNConnector(mockDB.Driver(), "test"), opts...)
func DSNConnector(d driver.Driver, dsn string) driver.Connector {
	return dsnConnector{drv: d, dsn: dsn}
}

type wrappedDriver struct {
	raw  driver.Driver
	opts []Option
}

// Open implements driver.Driver.
func (d *wrappedDriver) Open(name string) (driver.Conn, error) {
	c, err := d.OpenConnector(name)
	if err != nil {
		return nil, err
	}
	return c.Connect(context.Background())
}

// OpenConnector implements driver.DriverContext: the DSN is parsed once per sql.Open.
func (d *wrappedDriver) OpenConnector(name string) (driver.Connector, error) {
	clean, dsnOpts, err := splitDSN(name, d.dialect())
	if err != nil {
		return nil, err
	}
	opts := append(slices.Clip(d.opts), dsnOpts...)
	core, err := newCore(opts)
	if err != nil {
		return nil, err
	}
	var raw driver.Connector
	if dc, ok := d.raw.(driver.DriverContext); ok {
		if raw, err = dc.OpenConnector(clean); err != nil {
			return nil, err
		}
	} else {
		raw = dsnConnector{drv: d.raw, dsn: clean}
	}
	core.raw = raw
	return &connector{raw: raw, core: core, drv: d}, nil
}

// dialect is the dialect Register's options name (nil for none).
func (d *wrappedDriver) dialect() dialect.Dialect {
	cfg := defaultConfig()
	for _, o := range d.opts {
		o(&cfg)
	}
	return cfg.dialect
}

type dsnConnector struct {
	drv driver.Driver
	dsn string
}

func (c dsnConnector) Connect(context.Context) (driver.Conn, error) { return c.drv.Open(c.dsn) }
func (c dsnConnector) Driver() driver.Driver                        { return c.drv }

type errConnector struct {
	err error
	drv driver.Driver
}

func (c errConnector) Connect(context.Context) (driver.Conn, error) { return nil, c.err }
func (c errConnector) Driver() driver.Driver                        { return c.drv }
