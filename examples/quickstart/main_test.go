package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRun(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out))
	require.Equal(t, `accepted 2, skipped [12-34]
campaign Ready: 2 messages pending
998901234567: "Hello Aziz, your code is 4711"
`, out.String())
}
