package sqlstore

import (
	"context"
	"database/sql"
	"sync"

	"github.com/heraldhq/herald/messaging"
)

// readStmts holds prepared statements of the read pool by their text, so
// that the hot reads (a campaign, a template, a company by API key) are
// parsed once per connection rather than on every call. Preparing takes a
// read connection for a moment and never waits on a transaction, so
// statements are prepared lazily, on first use.
type readStmts struct {
	m sync.Map // text -> *sql.Stmt
}

// readRow runs the constant query q (with ? placeholders) on the read
// pool as a prepared statement. When preparing fails the query runs
// unprepared, so a failure shows as the query's own error.
func (s *Store) readRow(ctx context.Context, q string, args ...any) *sql.Row {
	if st := s.readStmt(ctx, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return s.read.DB.QueryRowContext(ctx, s.placeholders(q), args...)
}

// readQuery is readRow for queries of several rows.
func (s *Store) readQuery(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if st := s.readStmt(ctx, q); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return s.read.DB.QueryContext(ctx, s.placeholders(q), args...)
}

func (s *Store) readStmt(ctx context.Context, q string) *sql.Stmt {
	if v, ok := s.readStmts.m.Load(q); ok {
		return v.(*sql.Stmt)
	}
	st, err := s.read.DB.PrepareContext(ctx, s.placeholders(q))
	if err != nil {
		return nil
	}
	if v, loaded := s.readStmts.m.LoadOrStore(q, st); loaded {
		_ = st.Close()
		return v.(*sql.Stmt)
	}
	return st
}

// closeReadStmts closes the read pool's prepared statements.
func (s *Store) closeReadStmts() {
	s.readStmts.m.Range(func(k, v any) bool {
		_ = v.(*sql.Stmt).Close()
		s.readStmts.m.Delete(k)
		return true
	})
}

// admitQueries are the writer statements of admission (AdmitMessages,
// InsertMessages) of constant text, prepared with the delivery
// statements.
type admitQueries struct {
	lockCampaigns, admit, pendingOf, addPending, addPendingCounter string
}

func (s *Store) newAdmitQueries() admitQueries {
	lock := "SELECT id, company_id, status, planned, " + counterColumns + ", cancelled_at IS NOT NULL FROM campaigns WHERE " +
		s.jsonIDsIn("id") + " ORDER BY id"
	if s.dialect == dialectPostgres {
		lock += " FOR UPDATE"
	}
	col := counterColumn(messaging.StatusPending, false)
	return admitQueries{
		lockCampaigns:     lock,
		admit:             "UPDATE companies SET pending_count = pending_count + ? WHERE id = ? AND pending_count + ? <= ? RETURNING pending_count",
		pendingOf:         "SELECT pending_count FROM companies WHERE id = ?",
		addPending:        "UPDATE companies SET pending_count = pending_count + ?, " + drainSet + " WHERE id = ?",
		addPendingCounter: "UPDATE campaigns SET " + col + " = " + col + " + ? WHERE id = ?",
	}
}

func (q admitQueries) texts() []string {
	return []string{q.lockCampaigns, q.admit, q.pendingOf, q.addPending, q.addPendingCounter}
}

// rawQueryRow is rawQuery for statements that return one row.
func (s *Store) rawQueryRow(ctx context.Context, tx *txn, q string, args ...any) *sql.Row {
	if st := s.stmts.get(q); st != nil {
		return tx.Tx.Tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return tx.Tx.Tx.QueryRowContext(ctx, s.placeholders(q), args...)
}

// admitStatements returns the admission statements of the store's dialect.
func (s *Store) admitStatements() *admitQueries {
	s.queries()
	return &s.stmts.admit
}
