package template

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/heraldhq/herald/messaging"
)

// CheckChars is Herald's one rule on the characters of a stored text: s
// must be valid UTF-8 and hold no control character U+0000-U+001F other
// than tab, line feed and carriage return. It returns nil, or an error
// phrased to follow a field name ("must not contain the control character
// U+0000 (character 4)"), for the caller to attach to its field.
//
// Every text Herald keeps goes through it: template fields, campaign
// names and descriptions, message texts, external user ids, placeholder
// names and values, company names, chat service fields. It costs one pass
// over s and does not allocate unless s fails.
func CheckChars(s string) error {
	for i, n := 0, 0; i < len(s); n++ {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
				return fmt.Errorf("must not contain the control character U+%04X (character %d)", c, n+1)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return fmt.Errorf("must be valid UTF-8 (invalid byte 0x%02X at byte %d)", c, i)
		}
		i += size
	}
	return nil
}

// CheckFieldChars adds the problem CheckChars finds in s, if any, to
// field, named by its last element: "name must not contain ...".
func CheckFieldChars(fe *messaging.FieldErrors, field, s string) {
	if err := CheckChars(s); err != nil {
		fe.Add(field, "%s %v", FieldName(field), err)
	}
}

// CheckField adds a field error to fe when s is not between lo and hi
// code points (lo 1 means required: blank counts as missing) or holds
// characters CheckChars refuses.
func CheckField(fe *messaging.FieldErrors, field, s string, lo, hi int) {
	n := utf8.RuneCountInString(s)
	switch {
	case lo > 0 && strings.TrimSpace(s) == "":
		fe.Add(field, "%s is required", FieldName(field))
	case CheckChars(s) != nil:
		CheckFieldChars(fe, field, s)
	case n < lo:
		fe.Add(field, "%s must be at least %d characters", FieldName(field), lo)
	case n > hi:
		fe.Add(field, "%s must be at most %d characters", FieldName(field), hi)
	}
}
