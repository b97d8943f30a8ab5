package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestHeadlineTargets: the table's figures come from the runs they name,
// each with its verdict against its bound, and a run not made is not
// measured rather than met.
func TestHeadlineTargets(t *testing.T) {
	h := headlineRuns{
		bare:   result{messages: 100, cpu: 4 * time.Millisecond, finalRate: 1000},
		sqlite: result{messages: 100, cpu: 10 * time.Millisecond, finalRate: 850},
		hooks: result{messages: 100, hookCPU: 12 * time.Millisecond, finalRate: 800, events: 200,
			lastEventLag: 3 * time.Second},
		chat: providerResult{cpu: 3 * time.Second, sendsCPU: 2 * time.Second, events: 50_000},
	}
	got := map[string]headlineTarget{}
	for _, tg := range h.targets() {
		got[tg.figure] = tg
	}
	cpu := got["SMS, SQLite: Herald CPU per SMS"]
	require.InDelta(t, 2.5, cpu.value, 1e-9)
	require.Equal(t, "missed", cpu.verdict())
	rate := got["SMS, SQLite: throughput"]
	require.InDelta(t, 0.85, rate.value, 1e-9)
	require.Equal(t, "met", rate.verdict())
	require.Equal(t, "not measured", got["SMS, Postgres: Herald + backends per SMS"].verdict())
	require.InDelta(t, 10, got["Webhooks, batched: CPU per event"].value, 1e-9) // (12 - 10) ms over 200 events
	require.Equal(t, "met", got["Webhooks, batched: CPU per event"].verdict())
	require.Equal(t, "missed", got["Webhooks, batched: last event after last status"].verdict())
	require.InDelta(t, 20, got["Chat callbacks, batched: CPU per event"].value, 1e-9)
	require.Equal(t, "not measured", got["Chat callbacks, Meta: CPU per event"].verdict())

	var b bytes.Buffer
	writeHeadline(&b, h.targets())
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 2+len(h.targets()))
	for _, l := range lines {
		require.LessOrEqual(t, len(l), 120, l)
	}
	require.Contains(t, b.String(), "| SMS, SQLite: Herald CPU per SMS | <= 1.8 x bare | 2.50 x (100.0 against 40.0 us) | missed |")
}
