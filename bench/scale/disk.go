package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// diskUse is what the database holds and the bytes it takes.
type diskUse struct {
	messages, parts, answers int64 // rows
	database                 int64 // bytes: SQLite page_count × page_size, Postgres pg_database_size
	free                     int64 // SQLite: of which free pages
	tables                   map[string]int64
	file, wal                int64 // SQLite, after a checkpoint: the sizes of the files; -1 when not measured
}

// diskTables are the tables whose bytes (with their indexes) are
// reported.
func diskTables() []string { return []string{"messages", "sms_parts", "survey_results"} }

// perMessage is b per message stored.
func (u diskUse) perMessage(b int64) float64 {
	if u.messages == 0 {
		return 0
	}
	return float64(b) / float64(u.messages)
}

// diskUse counts the rows and measures the bytes the database takes.
// With checkpoint (on SQLite, once Herald has stopped) it first copies
// the write-ahead log into the database file and empties it, and measures
// both files.
func (d *database) diskUse(ctx context.Context, checkpoint bool) (diskUse, error) {
	u := diskUse{tables: map[string]int64{}, file: -1, wal: -1}
	for _, c := range []struct {
		dst   *int64
		table string
	}{{&u.messages, "messages"}, {&u.parts, "sms_parts"}, {&u.answers, "survey_results"}} {
		if err := d.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+c.table).Scan(c.dst); err != nil {
			return diskUse{}, fmt.Errorf("count %s: %w", c.table, err)
		}
	}
	if d.pg {
		if err := d.db.QueryRowContext(ctx, "SELECT pg_database_size(current_database())").Scan(&u.database); err != nil {
			return diskUse{}, fmt.Errorf("database size: %w", err)
		}
		for _, t := range diskTables() {
			var n int64
			// A partitioned table has no storage of its own: its size is
			// its partitions'.
			if err := d.db.QueryRowContext(ctx, d.q("SELECT COALESCE((SELECT SUM(pg_total_relation_size(relid)) FROM pg_partition_tree(CAST(? AS regclass))), "+
				"pg_total_relation_size(CAST(? AS regclass)))"), t, t).Scan(&n); err != nil {
				return diskUse{}, fmt.Errorf("size of %s: %w", t, err)
			}
			u.tables[t] = n
		}
		return u, nil
	}
	if checkpoint {
		var busy, logged, copied int
		if err := d.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logged, &copied); err != nil {
			return diskUse{}, fmt.Errorf("checkpoint: %w", err)
		}
		if busy != 0 {
			return diskUse{}, errors.New("checkpoint: the database is busy")
		}
		for _, f := range []struct {
			dst  *int64
			path string
		}{{&u.file, d.path}, {&u.wal, d.path + "-wal"}} {
			st, err := os.Stat(f.path)
			switch {
			case errors.Is(err, os.ErrNotExist):
				*f.dst = 0
			case err != nil:
				return diskUse{}, fmt.Errorf("size of the database files: %w", err)
			default:
				*f.dst = st.Size()
			}
		}
	}
	var pages, size, free int64
	for _, p := range []struct {
		dst  *int64
		name string
	}{{&pages, "page_count"}, {&size, "page_size"}, {&free, "freelist_count"}} {
		if err := d.db.QueryRowContext(ctx, "PRAGMA "+p.name).Scan(p.dst); err != nil {
			return diskUse{}, fmt.Errorf("PRAGMA %s: %w", p.name, err)
		}
	}
	u.database, u.free = pages*size, free*size
	// The pages of each table and of its indexes, b-tree by b-tree
	// (dbstat reads every page of each).
	for _, t := range diskTables() {
		names, err := d.btrees(ctx, t)
		if err != nil {
			return diskUse{}, err
		}
		for _, name := range names {
			var n int64
			err := d.db.QueryRowContext(ctx, "SELECT COALESCE(SUM(pgsize), 0) FROM dbstat WHERE name = ? AND aggregate = TRUE", name).Scan(&n)
			if err != nil {
				return diskUse{}, fmt.Errorf("size of %s: %w", name, err)
			}
			u.tables[t] += n
		}
	}
	return u, nil
}

// btrees names the SQLite table and its indexes.
func (d *database) btrees(ctx context.Context, table string) ([]string, error) {
	rows, err := d.db.QueryContext(ctx, "SELECT name FROM sqlite_schema WHERE tbl_name = ? AND type IN ('table', 'index')", table)
	if err != nil {
		return nil, fmt.Errorf("indexes of %s: %w", table, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, fmt.Errorf("indexes of %s: %w", table, err)
		}
		out = append(out, name)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("indexes of %s: %w", table, err)
	}
	return out, nil
}

// heraldCheck runs herald check on the database: it recounts every
// campaign's counters and each company's pending count from the rows. It
// returns the command's output and how long it took; drift is an error.
func heraldCheck(ctx context.Context, bin, dbURL string) (string, time.Duration, error) {
	start := time.Now()
	out, err := exec.CommandContext(ctx, bin, "check", "-database-url", dbURL).CombinedOutput()
	took := time.Since(start)
	text := strings.TrimSpace(string(out))
	if err != nil {
		return text, took, fmt.Errorf("herald check: %w: %s", err, text)
	}
	return text, took, nil
}
