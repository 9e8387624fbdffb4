package testpg_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/convsvc/convsvc/internal/testing/testpg"
)

func TestMain(m *testing.M) { testpg.Main(m) }

// TestNewDatabase gets two databases, proves each is empty, separate and writable.
func TestNewDatabase(t *testing.T) {
	ctx := context.Background()
	var names []string
	for range 2 {
		conn, err := pgx.Connect(ctx, testpg.NewDatabase(t))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var name string
		var tables int
		if err := conn.QueryRow(ctx, `SELECT current_database(), (SELECT count(*) FROM pg_tables WHERE schemaname='public')`).Scan(&name, &tables); err != nil {
			t.Fatal(err)
		}
		if tables != 0 {
			t.Fatalf("database %s has %d tables, want 0", name, tables)
		}
		if _, err := conn.Exec(ctx, `CREATE TABLE t (x int)`); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	if names[0] == names[1] {
		t.Fatalf("both calls gave database %s", names[0])
	}
}
