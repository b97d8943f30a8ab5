package sqlstore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/heraldhq/herald/accounts"
	"github.com/heraldhq/herald/store/sqlstore"
)

// Open creates and migrates an embedded SQLite database (a postgres:// URL
// opens Postgres the same way); the store then serves the domain services.
func ExampleOpen() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "herald-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	store, err := sqlstore.Open(ctx, "sqlite://"+filepath.Join(dir, "herald.db"), sqlstore.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()

	svc, err := accounts.New(accounts.Config{Store: store})
	if err != nil {
		fmt.Println(err)
		return
	}
	co, err := svc.CreateCompany(ctx, "Acme")
	if err != nil {
		fmt.Println(err)
		return
	}
	pending, _ := store.PendingCount(ctx, co.ID)
	fmt.Println(co.Name, "active:", co.Active, "pending:", pending)
	// Output:
	// Acme active: false pending: 0
}
