package redteam

func mysqlEntries() []entry { return nil }
