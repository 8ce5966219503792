package redteam

func sqliteEntries() []entry { return nil }
