package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	require.NoError(t, run(ctx, &out))
	require.Equal(t, `accepted 2, skipped [12-34]
campaign Completed: 2 delivered, 0 pending
998901234567 Delivered: "Hello Aziz, your code is 4711"
`, out.String())
}
