package dialect

// SystemNamer is implemented by a dialect whose database's OpenTelemetry name
// (the db.system.name attribute of the wrapper's metrics) is not its Name(): PostgreSQL
// is "postgresql" there. A dialect without it is reported under its Name().
type SystemNamer interface {
	SystemName() string
}
