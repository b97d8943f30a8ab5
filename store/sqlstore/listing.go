package sqlstore

import (
	"context"
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
