package sqlstore

import (
	"errors"
	"fmt"
	"strings"

	"github.com/uptrace/bun/driver/pgdriver"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/heraldhq/herald/messaging"
)

// Constraint names of the schema that map to domain errors.
const (
	constraintTemplateName = "templates_company_name"
)

// retryable reports whether a transaction that failed with err may
// succeed when run again: a Postgres deadlock or serialisation failure, or
// a SQLite lock still busy after the busy timeout.
func retryable(err error) bool {
	var pgErr pgdriver.Error
	if errors.As(err, &pgErr) {
		switch pgErr.Field('C') {
		case "40001", "40P01": // serialization_failure, deadlock_detected
			return true
		}
		return false
	}
	var sqErr *sqlite.Error
	if errors.As(err, &sqErr) {
		switch sqErr.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return true
		}
	}
	return false
}

// uniqueViolation reports whether err is a unique constraint failure, and
// on which constraint or columns: the constraint name on Postgres, the
// "table.column, ..." list of SQLite's message otherwise.
func uniqueViolation(err error) (string, bool) {
	var pgErr pgdriver.Error
	if errors.As(err, &pgErr) {
		if pgErr.Field('C') == "23505" {
			return pgErr.Field('n'), true
		}
		return "", false
	}
	var sqErr *sqlite.Error
	if errors.As(err, &sqErr) {
		switch sqErr.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			msg := sqErr.Error()
			if i := strings.Index(msg, "constraint failed: "); i >= 0 {
				msg = msg[i+len("constraint failed: "):]
			}
			return msg, true
		}
	}
	return "", false
}

// isTemplateNameTaken reports whether err is the failure of the unique
// template name per company.
func isTemplateNameTaken(err error) bool {
	c, ok := uniqueViolation(err)
	return ok && (c == constraintTemplateName || strings.Contains(c, "templates.name"))
}

// errNameTaken is the validation error of a duplicate template name.
func errNameTaken() error {
	return messaging.Invalidf("name", "name must be unique: the company has another template of that name")
}

// conflictf returns a Conflict error.
func conflictf(format string, args ...any) error {
	return messaging.Errorf(messaging.Conflict, messaging.NameConflict, format, args...)
}

// duplicate maps a unique violation while inserting rows of kind to a
// Conflict, and wraps anything else.
func duplicate(err error, kind string) error {
	if _, ok := uniqueViolation(err); ok {
		return &messaging.Error{Code: messaging.Conflict, Name: messaging.NameConflict,
			Message: fmt.Sprintf("%s already exists", kind), Err: err}
	}
	return fmt.Errorf("insert %s: %w", kind, err)
}
