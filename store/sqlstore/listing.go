package sqlstore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/heraldhq/herald/messaging"
)

// listing is one page of a filtered list: the rows of table matching
// where (a condition on the company, then one "AND ..." term per filter
// given), counted, then read in order.
type listing struct {
	what    string // for errors: "messages"
	columns string
	from    string // " FROM messages WHERE company_id = ?"
	args    []any
	order   string // "created_at DESC, id DESC"
	// generic runs the count and the page as statements prepared on
	// the connection, planned once for all calls (Postgres): a listing
	// of partitioned messages that names no id plans every partition,
	// which cost more than the read itself.
	generic bool
}

// and adds the filter term cond (with one placeholder) and its argument.
func (l *listing) and(cond string, arg any) {
	l.from += " AND " + cond
	l.args = append(l.args, arg)
}

// list counts the rows of l and reads those of the requested page, with
// scan. A page past the end reads nothing.
func list[T any](ctx context.Context, s *Store, l listing, page messaging.PageRequest, scan func(interface{ Scan(...any) error }) (T, error)) ([]T, int, error) {
	page = pageDefaults(page)
	if l.generic && s.dialect == dialectPostgres {
		return listGeneric(ctx, s, l, page, scan)
	}
	return countAndPage(l, page, scan,
		func(args ...any) *sql.Row { return s.read.QueryRowContext(ctx, l.countQuery(), args...) },
		func(args ...any) (*sql.Rows, error) { return s.read.QueryContext(ctx, l.pageQuery(), args...) })
}

// countQuery and pageQuery are the texts of l's count and of its page.
func (l listing) countQuery() string { return "SELECT COUNT(*)" + l.from }
func (l listing) pageQuery() string {
	return "SELECT " + l.columns + l.from + " ORDER BY " + l.order + " LIMIT ? OFFSET ?"
}

// countAndPage runs l's count with count, then, unless the page lies past
// the end, its page with query, read with scan.
func countAndPage[T any](l listing, page messaging.PageRequest, scan func(interface{ Scan(...any) error }) (T, error),
	count func(args ...any) *sql.Row, query func(args ...any) (*sql.Rows, error)) ([]T, int, error) {
	var total int
	if err := count(l.args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count %s: %w", l.what, err)
	}
	if total <= page.Offset() {
		return nil, total, nil
	}
	rows, err := query(append(l.args, page.PageSize, page.Offset())...)
	if err != nil {
		return nil, 0, fmt.Errorf("list %s: %w", l.what, err)
	}
	out, err := collect(rows, scan)
	if err != nil {
		return nil, 0, fmt.Errorf("list %s: %w", l.what, err)
	}
	return out, total, nil
}

// listGeneric is list with the count and the page prepared on the
// connection and run with generic plans, in one read-only transaction.
// The store's sessions force custom plans (withCustomPlans), planned on
// each run: SET LOCAL lifts that for this transaction only. A generic plan
// is made on the connection's first run and again when a partition is
// attached, dropped or analyzed, so it follows the partitions as they
// grow.
func listGeneric[T any](ctx context.Context, s *Store, l listing, page messaging.PageRequest, scan func(interface{ Scan(...any) error }) (T, error)) (_ []T, _ int, err error) {
	countSt, pageSt := s.readStmt(ctx, l.countQuery()), s.readStmt(ctx, l.pageQuery())
	if countSt == nil || pageSt == nil {
		l.generic = false
		return list(ctx, s, l, page, scan)
	}
	tx, err := s.read.DB.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, 0, fmt.Errorf("list %s: %w", l.what, err)
	}
	defer func() {
		if cerr := tx.Commit(); err == nil && cerr != nil {
			err = fmt.Errorf("list %s: %w", l.what, cerr)
		}
	}()
	if _, err := tx.ExecContext(ctx, "SET LOCAL plan_cache_mode = force_generic_plan"); err != nil {
		return nil, 0, fmt.Errorf("list %s: %w", l.what, err)
	}
	return countAndPage(l, page, scan,
		func(args ...any) *sql.Row { return tx.StmtContext(ctx, countSt).QueryRowContext(ctx, args...) },
		func(args ...any) (*sql.Rows, error) { return tx.StmtContext(ctx, pageSt).QueryContext(ctx, args...) })
}
