package client_test

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/heraldhq/herald/client/internal/contract"
)

// TestMain runs the tests, then, when they all ran and passed, checks
// that they exercised every operation of /api/v1 through the client, each
// with a success and with an error, against the real server.
func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if code != 0 || flag.Lookup("test.run").Value.String() != "" || testing.Short() {
		os.Exit(code)
	}
	c, err := contract.Load()
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	noSuccess, noError := c.Unexercised("/api/v1/")
	if len(noSuccess)+len(noError) > 0 {
		fmt.Printf("operations of /api/v1 never answered a success: %v\nnever answered an error: %v\n", noSuccess, noError)
		os.Exit(1)
	}
	os.Exit(code)
}
