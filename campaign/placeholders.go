package campaign

import (
	"iter"
	"slices"
	"strings"
)

// Placeholder is one placeholder value: {{Name}} is replaced by Value.
type Placeholder struct {
	Name, Value string
}

// Placeholders are a recipient's placeholder values, one per name. A bulk
// send keeps its recipients until every message is written, so their
// values are a slice (about 32 bytes a value) rather than a map (over 300
// bytes however few values it holds): five 200,000-recipient requests at
// once keep about 270 MB less.
type Placeholders []Placeholder

// PlaceholdersOf returns the values of m, ordered by name.
func PlaceholdersOf(m map[string]string) Placeholders {
	if m == nil {
		return nil
	}
	p := make(Placeholders, 0, len(m))
	for k, v := range m {
		p = append(p, Placeholder{k, v})
	}
	slices.SortFunc(p, func(a, b Placeholder) int { return strings.Compare(a.Name, b.Name) })
	return p
}

// Get returns the value of name.
func (p Placeholders) Get(name string) (string, bool) {
	for _, v := range p {
		if v.Name == name {
			return v.Value, true
		}
	}
	return "", false
}

// Set sets the value of name, replacing an earlier one.
func (p *Placeholders) Set(name, value string) {
	for i := range *p {
		if (*p)[i].Name == name {
			(*p)[i].Value = value
			return
		}
	}
	*p = append(*p, Placeholder{name, value})
}

// Delete removes the value of name.
func (p *Placeholders) Delete(name string) {
	*p = slices.DeleteFunc(*p, func(v Placeholder) bool { return v.Name == name })
}

// All yields the names and values.
func (p Placeholders) All() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for _, v := range p {
			if !yield(v.Name, v.Value) {
				return
			}
		}
	}
}

// Map returns the values as a map: m, cleared and filled, when it is not
// nil (rendering one recipient after another reuses one map), else a new
// one; nil when there are no values and m is nil.
func (p Placeholders) Map(m map[string]string) map[string]string {
	if m == nil {
		if len(p) == 0 {
			return nil
		}
		m = make(map[string]string, len(p))
	}
	clear(m)
	for _, v := range p {
		m[v.Name] = v.Value
	}
	return m
}
