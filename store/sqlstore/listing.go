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
	var total int
	if err := s.read.QueryRowContext(ctx, "SELECT COUNT(*)"+l.from, l.args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count %s: %w", l.what, err)
	}
	if total <= page.Offset() {
		return nil, total, nil
	}
	rows, err := s.read.QueryContext(ctx, "SELECT "+l.columns+l.from+" ORDER BY "+l.order+" LIMIT ? OFFSET ?",
		append(l.args, page.PageSize, page.Offset())...)
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
	countQ := "SELECT COUNT(*)" + l.from
	pageQ := "SELECT " + l.columns + l.from + " ORDER BY " + l.order + " LIMIT ? OFFSET ?"
	countSt, pageSt := s.readStmt(ctx, countQ), s.readStmt(ctx, pageQ)
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
	var total int
	if err := tx.StmtContext(ctx, countSt).QueryRowContext(ctx, l.args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count %s: %w", l.what, err)
	}
	if total <= page.Offset() {
		return nil, total, nil
	}
	rows, err := tx.StmtContext(ctx, pageSt).QueryContext(ctx, append(l.args, page.PageSize, page.Offset())...)
	if err != nil {
		return nil, 0, fmt.Errorf("list %s: %w", l.what, err)
	}
	out, err := collect(rows, scan)
	if err != nil {
		return nil, 0, fmt.Errorf("list %s: %w", l.what, err)
	}
	return out, total, nil
}
