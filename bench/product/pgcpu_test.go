package main

import "testing"

func TestClassifyPostgres(t *testing.T) {
	for _, c := range []struct {
		title         string
		backend, ours bool
	}{
		{"/usr/lib/postgresql/15/bin/postgres\x00-D\x00/var/lib/postgresql/15/main\x00", false, false},
		{"postgres: 15/main: checkpointer                    ", false, false},
		{"postgres: 15/main: background writer   ", false, false},
		{"postgres: 15/main: autovacuum worker hb_run1", false, false},
		{"postgres: 15/main: postgres hb_run1 127.0.0.1(50312) idle", true, true},
		{"postgres: 15/main: postgres hb_run1 127.0.0.1(50312) UPDATE", true, true},
		{"postgres: postgres hb_run1 [local] idle in transaction", true, true},
		{"postgres: 15/main: postgres test 127.0.0.1(50400) idle", true, false},
	} {
		backend, ours := classifyPostgres(c.title, "hb_run1")
		if backend != c.backend || ours != c.ours {
			t.Errorf("%q: backend %v, ours %v; want %v, %v", c.title, backend, ours, c.backend, c.ours)
		}
	}
}
