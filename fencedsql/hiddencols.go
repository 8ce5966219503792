package fencedsql

import (
	"database/sql/driver"
	"io"
	"reflect"
)

// hiddenCols are a statement's rows without their last hidden columns: columns the
// wrapper appended to the caller's list (a one-statement DELETE … RETURNING's fence
// check, plan.Plan.Hidden), which the caller must not see. The caller's columns come
// first, so their indexes are the driver's; the optional column interfaces are the
// driver rows'.
type hiddenCols struct {
	driver.Rows
	hidden int
	buf    []driver.Value
}

var (
	_ driver.RowsNextResultSet              = (*hiddenCols)(nil)
	_ driver.RowsColumnTypeScanType         = (*hiddenCols)(nil)
	_ driver.RowsColumnTypeDatabaseTypeName = (*hiddenCols)(nil)
	_ driver.RowsColumnTypeLength           = (*hiddenCols)(nil)
	_ driver.RowsColumnTypeNullable         = (*hiddenCols)(nil)
	_ driver.RowsColumnTypePrecisionScale   = (*hiddenCols)(nil)
)

// Columns implements driver.Rows: the caller's columns.
func (h *hiddenCols) Columns() []string {
	cols := h.Rows.Columns()
	return cols[:max(len(cols)-h.hidden, 0)]
}

// Next implements driver.Rows: the row's caller columns.
func (h *hiddenCols) Next(dest []driver.Value) error {
	n := len(dest) + h.hidden
	if cap(h.buf) < n {
		h.buf = make([]driver.Value, n)
	}
	buf := h.buf[:n]
	if err := h.Rows.Next(buf); err != nil {
		return err
	}
	copy(dest, buf)
	return nil
}

// native is the driver's rows under h (a cached statement's rows unwrapped).
func (h *hiddenCols) native() driver.Rows {
	if cs, ok := h.Rows.(*closeStmtRows); ok {
		return cs.Rows
	}
	return h.Rows
}

func (h *hiddenCols) HasNextResultSet() bool {
	x, ok := h.native().(driver.RowsNextResultSet)
	return ok && x.HasNextResultSet()
}

func (h *hiddenCols) NextResultSet() error {
	if x, ok := h.native().(driver.RowsNextResultSet); ok {
		return x.NextResultSet()
	}
	return io.EOF
}

func (h *hiddenCols) ColumnTypeScanType(i int) reflect.Type {
	if x, ok := h.native().(driver.RowsColumnTypeScanType); ok {
		return x.ColumnTypeScanType(i)
	}
	return reflect.TypeFor[any]()
}

func (h *hiddenCols) ColumnTypeDatabaseTypeName(i int) string {
	if x, ok := h.native().(driver.RowsColumnTypeDatabaseTypeName); ok {
		return x.ColumnTypeDatabaseTypeName(i)
	}
	return ""
}

func (h *hiddenCols) ColumnTypeLength(i int) (int64, bool) {
	if x, ok := h.native().(driver.RowsColumnTypeLength); ok {
		return x.ColumnTypeLength(i)
	}
	return 0, false
}

func (h *hiddenCols) ColumnTypeNullable(i int) (bool, bool) {
	if x, ok := h.native().(driver.RowsColumnTypeNullable); ok {
		return x.ColumnTypeNullable(i)
	}
	return false, false
}

func (h *hiddenCols) ColumnTypePrecisionScale(i int) (int64, int64, bool) {
	if x, ok := h.native().(driver.RowsColumnTypePrecisionScale); ok {
		return x.ColumnTypePrecisionScale(i)
	}
	return 0, 0, false
}
