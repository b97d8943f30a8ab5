package campaign

import (
	"strings"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/template"
)

// MissingPolicy says what a send does with a recipient who has no value
// for one of its template's placeholders: neither a value of its own nor a
// request-level one. Either way the send reports such placeholders
// (SendResult.MissingPlaceholders, Added.MissingPlaceholders).
type MissingPolicy uint8

const (
	// KeepMissing sends the message with the placeholder as written
	// ("Hi {{firstName}}"): the default.
	KeepMissing MissingPolicy = iota
	// SkipMissing leaves the recipient out: a bulk send skips it and lists
	// its number in SendResult.MissingPlaceholderPhoneNumbers; an
	// add-message is Invalid on "placeholders.<name>".
	SkipMissing
)

// ParseMissingPolicy reads the API's missingPlaceholders field: "keep"
// (or absent, "") or "skip". Anything else is Invalid on that field.
func ParseMissingPolicy(s string) (MissingPolicy, error) {
	switch s {
	case "", "keep":
		return KeepMissing, nil
	case "skip":
		return SkipMissing, nil
	}
	return KeepMissing, messaging.Invalidf("missingPlaceholders", "missingPlaceholders must be keep or skip, not %q", s)
}

// MissingPlaceholder is a placeholder of a send's template that some of
// its recipients have no value for.
type MissingPlaceholder struct {
	// Name is the placeholder's name, without braces.
	Name string
	// Recipients counts the recipients without a value for it.
	Recipients int
}

// unfilled returns the placeholder names of c that request gives no value
// for: the only ones a recipient can lack.
func unfilled(c *template.Compiled, request map[string]string) []string {
	names := c.Names()
	kept := names[:0]
	for _, n := range names {
		if _, ok := request[n]; !ok {
			kept = append(kept, n)
		}
	}
	return kept
}

// lacking counts, among the recipients of valid, those without a value
// for each of names (in res.MissingPlaceholders, in the names' order,
// names no recipient lacks left out). With SkipMissing it also drops the
// recipients lacking any, listing their numbers as sent in
// res.MissingPlaceholderPhoneNumbers; when none is left the send is
// Invalid on "placeholders.<name>", the name most recipients lack.
// valid[j] is recipients[index[j]]; both are compacted alike.
func lacking(names []string, recipients, valid []Recipient, index []int32, policy MissingPolicy, res *SendResult) ([]Recipient, []int32, error) {
	res.MissingPlaceholders = []MissingPlaceholder{}
	res.MissingPlaceholderPhoneNumbers = []string{}
	if len(names) == 0 {
		return valid, index, nil
	}
	counts := make([]int, len(names))
	kept := valid[:0]
	keptIndex := index[:0]
	for j, r := range valid {
		lacks := false
		for i, n := range names {
			if _, ok := r.Placeholders.Get(n); !ok {
				counts[i]++
				lacks = true
			}
		}
		if lacks && policy == SkipMissing {
			res.MissingPlaceholderPhoneNumbers = append(res.MissingPlaceholderPhoneNumbers, recipients[index[j]].Phone)
			continue
		}
		keptIndex = append(keptIndex, index[j])
		kept = append(kept, r)
	}
	most := 0
	for i, n := range names {
		if counts[i] > 0 {
			res.MissingPlaceholders = append(res.MissingPlaceholders, MissingPlaceholder{Name: n, Recipients: counts[i]})
		}
		if counts[i] > counts[most] {
			most = i
		}
	}
	if len(kept) == 0 {
		return nil, nil, messaging.Invalidf("placeholders."+names[most],
			"Every recipient lacks a value for at least one placeholder (%d have no %s) and missingPlaceholders is skip: no recipient is left; give the value in placeholders or in each recipient's placeholders",
			counts[most], "{{"+names[most]+"}}")
	}
	clear(valid[len(kept):])
	res.SkippedCount += len(res.MissingPlaceholderPhoneNumbers)
	res.MessageCount = len(kept)
	return kept, keptIndex, nil
}

// lackedBy returns the placeholder names of c that r has no value for
// (add-message has no request-level values), as MissingPlaceholders of one
// recipient each; with SkipMissing a lacking name is Invalid.
func lackedBy(c *template.Compiled, r Recipient, policy MissingPolicy) ([]MissingPlaceholder, error) {
	out := []MissingPlaceholder{}
	var names []string
	for _, n := range c.Names() {
		if _, ok := r.Placeholders.Get(n); !ok {
			out = append(out, MissingPlaceholder{Name: n, Recipients: 1})
			names = append(names, "{{"+n+"}}")
		}
	}
	if len(names) > 0 && policy == SkipMissing {
		return nil, messaging.Invalidf("placeholders."+out[0].Name,
			"No value for %s and missingPlaceholders is skip: the message was not added", strings.Join(names, ", "))
	}
	return out, nil
}
