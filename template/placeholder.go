package template

import "strings"

// Text is a text compiled once into literal parts and placeholders, ready
// to be rendered for many recipients. The zero value is an empty text.
// A Text is immutable and safe for concurrent use.
type Text struct {
	src    string
	parts  []part
	litLen int // total length of the literal parts, in bytes
	vars   int // number of placeholder parts
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
			t.parts = append(t.parts, part{text: s[lit:j]})
			t.litLen += j - lit
		}
		t.parts = append(t.parts, part{text: s[j : k+2], name: s[j+2 : k]})
		t.vars++
		i = k + 2
		lit = i
	}
	if lit < len(s) {
		t.parts = append(t.parts, part{text: s[lit:]})
		t.litLen += len(s) - lit
	}
	return t
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
	for _, p := range t.parts {
		if p.name == "" {
			continue
		}
		seen := false
		for _, n := range names {
			if n == p.name {
				seen = true
				break
			}
		}
		if !seen {
			names = append(names, p.name)
		}
	}
	return names
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
