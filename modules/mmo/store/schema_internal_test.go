package store

import "testing"

func TestSchemaVersionCountsMigrations(t *testing.T) {
	if len(migrations) != SchemaVersion {
		t.Fatalf("%d migrations but SchemaVersion = %d", len(migrations), SchemaVersion)
	}
}
