package main

import "testing"

func TestIsBackendOf(t *testing.T) {
	for _, c := range []struct {
		cmdline string
		want    bool
	}{
		{"postgres: 15/main: postgres herald_replicas_1_1 127.0.0.1(50426) idle", true},
		{"postgres: postgres herald_replicas_1_1 127.0.0.1(50426) idle", true},
		{"postgres: 15/main: postgres herald_replicas_1_12 127.0.0.1(50426) idle", false},
		{"postgres: 15/main: checkpointer ", false},
		{"postgres: 15/main: walwriter", false},
		{"/usr/lib/postgresql/15/bin/postgres\x00-D\x00/var/lib/postgresql/15/main\x00", false},
	} {
		if got := isBackendOf(c.cmdline, "herald_replicas_1_1"); got != c.want {
			t.Errorf("isBackendOf(%q) = %v, want %v", c.cmdline, got, c.want)
		}
	}
}

func TestMachineCPUSince(t *testing.T) {
	a, b := cpuJiffies{busy: 100, total: 400}, cpuJiffies{busy: 250, total: 600}
	if got := b.since(a); got != 0.75 {
		t.Errorf("busy share %v, want 0.75", got)
	}
	if got := a.since(a); got != 0 {
		t.Errorf("busy share of no time %v, want 0", got)
	}
}
