package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRun: the campaign goes over SMPP to the simulator and every message
// ends as its receipt says.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out bytes.Buffer
	require.NoError(t, run(ctx, filepath.Join(t.TempDir(), "herald.db"), &out))
	require.Equal(t, `447700900001 Failed UNDELIVERED
447700900002 Failed EXPIRED
447700900003 Failed REJECTED
447700900004 Delivered 
447700900005 Delivered 
`, out.String())
}
