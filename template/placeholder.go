package template

import (
	"math"
	"strings"
	"unicode/utf8"
)

// Text is a text compiled once into literal parts and placeholders, ready
// to be rendered for many recipients. The zero value is an empty text.
// A Text is immutable and safe for concurrent use.
type Text struct {
	src      string
	parts    []part
	litLen   int   // total length of the literal parts, in bytes
	litRunes int   // total length of the literal parts, in code points
	vars     int   // number of placeholder parts
	uses     []use // the placeholder names, each once, in order of first appearance
}

// use is a placeholder name and how many times it occurs in a text.
type use struct {
	name  string
	count int
}

// part is a literal (name == "") or a placeholder (text holds it as
// written, name its name).
type part struct {
	text string
	name string
}

// Compile splits s into literal text and {{name}} placeholders. A
// placeholder is "{{", one or more of [A-Za-z0-9_], then "}}"; anything
// else ("{{ name }}", "{{first-name}}", "{{}}") is literal text. Compile
// never fails: every string is a valid text.
func Compile(s string) *Text {
	t := &Text{src: s}
	lit := 0 // start of the literal not yet recorded
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], "{{")
		if j < 0 {
			break
		}
		j += i
		k := j + 2
		for k < len(s) && isNameByte(s[k]) {
			k++
		}
		if k == j+2 || k+1 >= len(s) || s[k] != '}' || s[k+1] != '}' {
			i = j + 1 // not a placeholder: "{" stays literal, look again
			continue
		}
		if j > lit {
			t.addLiteral(s[lit:j])
		}
		name := s[j+2 : k]
		t.parts = append(t.parts, part{text: s[j : k+2], name: name})
		t.vars++
		t.countUse(name)
		i = k + 2
		lit = i
	}
	if lit < len(s) {
		t.addLiteral(s[lit:])
	}
	return t
}

func (t *Text) addLiteral(s string) {
	t.parts = append(t.parts, part{text: s})
	t.litLen += len(s)
	t.litRunes += utf8.RuneCountInString(s)
}

// countUse counts one more occurrence of name.
func (t *Text) countUse(name string) {
	for i := range t.uses {
		if t.uses[i].name == name {
			t.uses[i].count++
			return
		}
	}
	t.uses = append(t.uses, use{name: name, count: 1})
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// String returns the text as it was compiled.
func (t *Text) String() string { return t.src }

// HasPlaceholders reports whether the text contains at least one
// placeholder.
func (t *Text) HasPlaceholders() bool { return t.vars > 0 }

// Names returns the placeholder names in order of first appearance, each
// once.
func (t *Text) Names() []string {
	var names []string
	for _, u := range t.uses {
		names = append(names, u.name)
	}
	return names
}

// Len returns the length in code points of Render(recipient, request)
// without rendering: the literal text's length plus, for each placeholder
// name, its number of occurrences times the length of its value (or of
// the placeholder as written when it has none). Each value is measured
// once, whatever its number of occurrences, and nothing is allocated.
// Invalid UTF-8 counts one per byte, as utf8.RuneCountInString counts
// it, so Len is exact for valid UTF-8 and never less than the rendered
// length otherwise (bytes of two pieces can join into one character).
func (t *Text) Len(recipient, request map[string]string) int {
	n := t.litRunes
	for _, u := range t.uses {
		v, ok := lookup(u.name, recipient, request)
		if !ok {
			n = addTimes(n, u.count, len(u.name)+4) // {{name}}
			continue
		}
		n = addTimes(n, u.count, utf8.RuneCountInString(v))
	}
	return n
}

// URLLen returns the length in bytes of RenderURL(recipient, request)
// without rendering, as Len does for Render.
func (t *Text) URLLen(recipient, request map[string]string) int {
	n := t.litLen
	for _, u := range t.uses {
		v, ok := lookup(u.name, recipient, request)
		if !ok {
			n = addTimes(n, u.count, len(u.name)+4)
			continue
		}
		n = addTimes(n, u.count, escapedLen(v))
	}
	return n
}

// addTimes returns n + count*size, saturating at math.MaxInt instead of
// overflowing.
func addTimes(n, count, size int) int {
	if size != 0 && count > (math.MaxInt-n)/size {
		return math.MaxInt
	}
	return n + count*size
}

// Render fills the placeholders. A name is looked up in recipient first,
// then in request (the request-level fallback); a name found in neither
// stays as written. A name present with an empty value renders empty.
// Either map may be nil. A text without placeholders is returned as is,
// without allocating; otherwise Render allocates the result only.
func (t *Text) Render(recipient, request map[string]string) string {
	if t.vars == 0 {
		return t.src
	}
	var b strings.Builder
	t.render(&b, recipient, request, false)
	return b.String()
}

// RenderURL is Render for a text that is a URL: characters of a value
// that cannot appear in a URL (ASCII controls, space, non-ASCII bytes and
// `"<>\^`+"`"+`{|}`) are percent-encoded; every other character, reserved
// ones such as '/', '?', '&' and '%' included, is copied as is. The
// literal parts are not changed.
func (t *Text) RenderURL(recipient, request map[string]string) string {
	if t.vars == 0 {
		return t.src
	}
	var b strings.Builder
	t.render(&b, recipient, request, true)
	return b.String()
}

// AppendRender appends the rendering of Render to dst and returns the
// extended slice; with a dst of enough capacity it does not allocate.
func (t *Text) AppendRender(dst []byte, recipient, request map[string]string) []byte {
	for _, p := range t.parts {
		if p.name == "" {
			dst = append(dst, p.text...)
			continue
		}
		if v, ok := lookup(p.name, recipient, request); ok {
			dst = append(dst, v...)
		} else {
			dst = append(dst, p.text...)
		}
	}
	return dst
}

// render writes the text into b, growing it once: a first pass looks the
// values up and sizes the result. The values of up to 16 placeholders are
// kept on the stack between the passes; beyond that they are looked up
// again.
func (t *Text) render(b *strings.Builder, recipient, request map[string]string, url bool) {
	var small [16]value
	cached := t.vars <= len(small)
	n, vi := t.litLen, 0
	for _, p := range t.parts {
		if p.name == "" {
			continue
		}
		v := t.value(p, recipient, request)
		if cached {
			small[vi] = v
			vi++
		}
		if v.found && url {
			n += escapedLen(v.s)
		} else {
			n += len(v.s)
		}
	}
	b.Grow(n)
	vi = 0
	for _, p := range t.parts {
		if p.name == "" {
			b.WriteString(p.text)
			continue
		}
		var v value
		if cached {
			v = small[vi]
			vi++
		} else {
			v = t.value(p, recipient, request)
		}
		if url && v.found {
			writeEscaped(b, v.s)
		} else {
			b.WriteString(v.s)
		}
	}
}

// value returns the rendering of placeholder p.
func (t *Text) value(p part, recipient, request map[string]string) value {
	if v, ok := lookup(p.name, recipient, request); ok {
		return value{v, true}
	}
	return value{p.text, false}
}

// value is a placeholder's rendering: the value found, or the
// placeholder as written when not found.
type value struct {
	s     string
	found bool
}

func lookup(name string, recipient, request map[string]string) (string, bool) {
	if v, ok := recipient[name]; ok {
		return v, true
	}
	v, ok := request[name]
	return v, ok
}

// urlUnsafe reports whether c cannot appear as is in a URL.
func urlUnsafe(c byte) bool {
	if c <= ' ' || c >= 0x7f {
		return true
	}
	switch c {
	case '"', '<', '>', '\\', '^', '`', '{', '|', '}':
		return true
	}
	return false
}

func escapedLen(v string) int {
	n := len(v)
	for i := 0; i < len(v); i++ {
		if urlUnsafe(v[i]) {
			n += 2
		}
	}
	return n
}

func writeEscaped(b *strings.Builder, v string) {
	const hex = "0123456789ABCDEF"
	start := 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !urlUnsafe(c) {
			continue
		}
		b.WriteString(v[start:i])
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&0x0f])
		start = i + 1
	}
	b.WriteString(v[start:])
}

// Render compiles s and renders it once; see Text.Render. To render one
// text for many recipients, Compile it once instead.
func Render(s string, recipient, request map[string]string) string {
	return Compile(s).Render(recipient, request)
}

// HasPlaceholders reports whether s contains a {{name}} placeholder. It
// does not allocate.
func HasPlaceholders(s string) bool {
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], "{{")
		if j < 0 {
			return false
		}
		j += i
		k := j + 2
		for k < len(s) && isNameByte(s[k]) {
			k++
		}
		if k > j+2 && k+1 < len(s) && s[k] == '}' && s[k+1] == '}' {
			return true
		}
		i = j + 1
	}
	return false
}
