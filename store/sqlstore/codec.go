package sqlstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/heraldhq/herald/messaging"
)

// Values written to the database: identifiers are 16-byte blobs on
// SQLite and canonical text (cast to uuid) on Postgres; times are
// microseconds since the epoch on SQLite and time.Time on Postgres.

// id returns the database form of id.
func (s *Store) id(id messaging.ID) any {
	if s.dialect == dialectSQLite {
		b := make([]byte, len(id))
		copy(b, id[:])
		return b
	}
	return id.String()
}

// nullID is id, or NULL when id is zero.
func (s *Store) nullID(id messaging.ID) any {
	if id.IsZero() {
		return nil
	}
	return s.id(id)
}

// ids returns the database forms of ids, for IN lists.
func (s *Store) ids(ids []messaging.ID) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = s.id(id)
	}
	return out
}

// ts returns the database form of t.
func (s *Store) ts(t time.Time) any {
	if s.dialect == dialectSQLite {
		return t.UnixMicro()
	}
	return t.UTC()
}

// nullTS is t, or NULL when t is zero.
func (s *Store) nullTS(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return s.ts(t)
}

// tsPtr is *t, or NULL when t is nil.
func (s *Store) tsPtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return s.ts(*t)
}

// jsonConfig returns the JSON text of c, or NULL when c is nil.
func jsonConfig(c *messaging.ChatConfig) (any, error) {
	if c == nil {
		return nil, nil
	}
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encode chat config: %w", err)
	}
	return string(b), nil
}

// Scan targets for the values read back.

// timeDst scans a time column (microseconds, a time, or its text) into t;
// NULL is the zero time.
type timeDst struct{ t *time.Time }

func (d timeDst) Scan(src any) error {
	t, _, err := scanTime(src)
	*d.t = t
	return err
}

// timePtrDst scans a nullable time column into *p; NULL is nil.
type timePtrDst struct{ p **time.Time }

func (d timePtrDst) Scan(src any) error {
	t, ok, err := scanTime(src)
	if !ok || err != nil {
		*d.p = nil
		return err
	}
	*d.p = &t
	return nil
}

func scanTime(src any) (time.Time, bool, error) {
	switch v := src.(type) {
	case nil:
		return time.Time{}, false, nil
	case int64:
		return time.UnixMicro(v).UTC(), true, nil
	case time.Time:
		return v.UTC(), true, nil
	case []byte:
		return parseTime(string(v))
	case string:
		return parseTime(v)
	}
	return time.Time{}, false, fmt.Errorf("scan time: unsupported type %T", src)
}

func parseTime(s string) (time.Time, bool, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999Z07"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true, nil
		}
	}
	return time.Time{}, false, fmt.Errorf("scan time: cannot parse %q", s)
}

// configDst scans a JSON chat configuration into *p; NULL is nil.
type configDst struct{ p **messaging.ChatConfig }

func (d configDst) Scan(src any) error {
	var b []byte
	switch v := src.(type) {
	case nil:
		*d.p = nil
		return nil
	case []byte:
		b = v
	case string:
		b = []byte(v)
	default:
		return fmt.Errorf("scan chat config: unsupported type %T", src)
	}
	c := new(messaging.ChatConfig)
	if err := json.Unmarshal(b, c); err != nil {
		return fmt.Errorf("scan chat config: %w", err)
	}
	*d.p = c
	return nil
}

// textDst scans a nullable text column into *p; NULL is "".
type textDst struct{ p *string }

func (d textDst) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*d.p = ""
	case string:
		*d.p = v
	case []byte:
		*d.p = string(v)
	default:
		return fmt.Errorf("scan text: unsupported type %T", src)
	}
	return nil
}

// compareIDs orders ids as the database does: byte by byte.
func compareIDs(a, b messaging.ID) int { return bytes.Compare(a[:], b[:]) }

// slicesSortIDs sorts ids in the database's order.
func slicesSortIDs(ids []messaging.ID) { slices.SortFunc(ids, compareIDs) }
