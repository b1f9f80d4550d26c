package store

import "testing"

func TestSchemaVersionCountsMigrations(t *testing.T) {
	for _, d := range []*dialect{sqliteDialect, postgresDialect} {
		if len(d.migrations) != SchemaVersion {
			t.Errorf("%s: %d migrations but SchemaVersion = %d", d.name, len(d.migrations), SchemaVersion)
		}
	}
}
