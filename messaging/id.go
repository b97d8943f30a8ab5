package messaging

import (
	"crypto/rand"
	"database/sql/driver"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"sync"
	"time"
)

// ID is a UUID. Herald creates version 7 UUIDs (time ordered), which keep
// B-tree inserts at the right-hand edge of the index and so stay fast for
// large batches.
type ID [16]byte

// NilID is the zero ID.
var NilID ID

// ParseID parses the canonical 36-character form of a UUID
// (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, any case).
func ParseID(s string) (ID, error) {
	var id ID
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return id, fmt.Errorf("invalid UUID %q", s)
	}
	b := make([]byte, 0, 32)
	b = append(b, s[0:8]...)
	b = append(b, s[9:13]...)
	b = append(b, s[14:18]...)
	b = append(b, s[19:23]...)
	b = append(b, s[24:36]...)
	if _, err := hex.Decode(id[:], b); err != nil {
		return NilID, fmt.Errorf("invalid UUID %q", s)
	}
	return id, nil
}

// MustParseID is ParseID for constants in tests and examples; it panics on
// a malformed input.
func MustParseID(s string) ID {
	id, err := ParseID(s)
	if err != nil {
		panic(err)
	}
	return id
}

// IsZero reports whether id is the zero ID.
func (id ID) IsZero() bool { return id == NilID }

// Time returns the millisecond a UUIDv7 was made in, read from its first
// 48 bits (for another kind of UUID it means nothing).
func (id ID) Time() time.Time {
	ms := int64(id[0])<<40 | int64(id[1])<<32 | int64(id[2])<<24 | int64(id[3])<<16 | int64(id[4])<<8 | int64(id[5])
	return time.UnixMilli(ms).UTC()
}

// String returns the canonical lower-case 36-character form.
func (id ID) String() string {
	var buf [36]byte
	id.encode(buf[:])
	return string(buf[:])
}

func (id ID) encode(dst []byte) {
	hex.Encode(dst[0:8], id[0:4])
	dst[8] = '-'
	hex.Encode(dst[9:13], id[4:6])
	dst[13] = '-'
	hex.Encode(dst[14:18], id[6:8])
	dst[18] = '-'
	hex.Encode(dst[19:23], id[8:10])
	dst[23] = '-'
	hex.Encode(dst[24:], id[10:])
}

// MarshalText implements encoding.TextMarshaler (JSON strings).
func (id ID) MarshalText() ([]byte, error) {
	buf := make([]byte, 36)
	id.encode(buf)
	return buf, nil
}

// AppendText implements encoding.TextAppender: it appends the canonical
// form to b.
func (id ID) AppendText(b []byte) ([]byte, error) {
	n := len(b)
	b = append(b, make([]byte, 36)...)
	id.encode(b[n:])
	return b, nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (id *ID) UnmarshalText(b []byte) error {
	v, err := ParseID(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// Value implements driver.Valuer: IDs are stored in their canonical text
// form, which both SQLite (TEXT) and Postgres (uuid) accept.
func (id ID) Value() (driver.Value, error) { return id.String(), nil }

// Scan implements sql.Scanner for text and 16-byte binary forms.
func (id *ID) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*id = NilID
		return nil
	case string:
		return id.UnmarshalText([]byte(v))
	case []byte:
		if len(v) == 16 {
			copy(id[:], v)
			return nil
		}
		return id.UnmarshalText(v)
	default:
		return fmt.Errorf("scan ID: unsupported type %T", src)
	}
}

// IDGenerator makes UUIDv7 identifiers. IDs made by one generator are
// strictly increasing, also within one millisecond. The zero value is not
// usable; use NewIDGenerator.
type IDGenerator struct {
	now  func() time.Time
	rand io.Reader

	mu     sync.Mutex
	lastMS int64
	seq    uint16 // 12-bit counter in rand_a
}

// NewIDGenerator returns a generator that reads the clock from now and
// randomness from crypto/rand. A nil now means time.Now.
func NewIDGenerator(now func() time.Time) *IDGenerator {
	if now == nil {
		now = time.Now
	}
	return &IDGenerator{now: now, rand: rand.Reader}
}

// New returns a fresh UUIDv7.
func (g *IDGenerator) New() ID {
	var id ID
	if _, err := io.ReadFull(g.rand, id[6:]); err != nil {
		panic(fmt.Sprintf("messaging: reading randomness: %v", err))
	}
	g.mu.Lock()
	ms := g.now().UnixMilli()
	if ms <= g.lastMS {
		ms = g.lastMS
		g.seq++
		if g.seq > 0x0fff { // counter exhausted: borrow the next millisecond
			ms++
			g.seq = 0
		}
	} else {
		g.seq = binary.BigEndian.Uint16(id[6:8]) & 0x01ff // random start, room to count
	}
	g.lastMS = ms
	seq := g.seq
	g.mu.Unlock()

	var ts [8]byte
	binary.BigEndian.PutUint64(ts[:], uint64(ms))
	copy(id[0:6], ts[2:8])
	id[6] = 0x70 | byte(seq>>8)&0x0f
	id[7] = byte(seq)
	id[8] = 0x80 | id[8]&0x3f
	return id
}
