package template

import (
	"fmt"
	"unicode/utf8"

	"github.com/heraldhq/herald/messaging"
)

// The rendered fields of a template, as indexes of Compiled's arrays.
const (
	fieldContent = iota
	fieldFallback
	fieldButtonURL
	fieldFileURL
	numFields
)

// renderedFields are the JSON paths of the rendered fields, and whether
// each is a URL (measured in bytes, values percent-encoded).
var renderedFields = [numFields]struct {
	path string
	url  bool
}{
	{"templateContent", false},
	{"smsFallbackTemplateContent", false},
	{configPrefix + "buttonUrl", true},
	{configPrefix + "fileUrl", true},
}

// Compiled is a template compiled for rendering many messages: its
// templateContent, its SMS fallback content and, for chat templates, the
// type-specific URLs that take placeholders (buttonUrl of ButtonPlusText
// and ImagePlusText, fileUrl of File), each with the limit Validate puts
// on the field. The limits bind the rendered text: a message whose
// rendering would exceed one is refused before anything is rendered. It is
// immutable and safe for concurrent use.
type Compiled struct {
	texts  [numFields]*Text // nil: the field is not rendered
	max    [numFields]int   // code points, bytes for URLs
	config *messaging.ChatConfig
	names  map[string]int // placeholder name -> index in uses
	// params are the parameters of the config's providerTemplate, when
	// one of them has placeholders: rendered like the content, without
	// a limit of Herald's (the provider checks them).
	params []*Text
	uses   []fieldUses
	free   *Bound // bound to no request-level values
}

// fieldUses is a placeholder name and its number of occurrences in each
// rendered field.
type fieldUses struct {
	name  string
	count [numFields]int
	// maxText and maxURL are one more than the largest limit of the text
	// and URL fields the name occurs in; 0 when it occurs in none.
	maxText, maxURL int
}

// Rendered is one message rendered from a template.
type Rendered struct {
	// Content is the rendered templateContent.
	Content string
	// Config is nil when the template's Config applies unchanged; else a
	// copy of it with buttonUrl, fileUrl or the providerTemplate's
	// parameters rendered for this recipient, to be stored as the
	// message's own Config. It is a shallow copy: its
	// Items and Options slices (unused by the types that get one) are the
	// template's.
	Config *messaging.ChatConfig
	// FallbackContent is the rendered SMS fallback text of a chat
	// template with the fallback enabled, else "".
	FallbackContent string
}

// CompileTemplate compiles t for rendering. imageUrl, videoUrl,
// thumbnailUrl, carousel URLs and fileName are never rendered: the API
// supports placeholders in templateContent, buttonUrl (types 3 and 4) and
// fileUrl (type 8) only, in the parameters of a providerTemplate, and in
// smsFallbackTemplateContent. Later changes
// to t's fields (but not to the elements of its Items and Options) do not
// affect the compiled form.
//
// The limits of the rendered fields are those of Validate: SMS content
// MaxSMSContentLen, chat content MaxChatContentLen (MaxSurveyQuestionLen
// for a Survey), SMS fallback MaxSMSContentLen, URLs MaxURLLen bytes.
func CompileTemplate(t *messaging.Template) *Compiled {
	c := &Compiled{}
	c.texts[fieldContent] = Compile(t.Content)
	c.max = [numFields]int{MaxSMSContentLen, MaxSMSContentLen, MaxURLLen, MaxURLLen}
	if t.Channel == messaging.ChannelChat {
		c.max[fieldContent] = MaxChatContentLen
		if t.MessageType == messaging.TypeSurvey {
			c.max[fieldContent] = MaxSurveyQuestionLen
		}
		if t.SMSFallbackEnabled {
			c.texts[fieldFallback] = Compile(t.SMSFallbackContent)
		}
		if t.Config != nil {
			cfg := *t.Config
			c.config = &cfg
			if pt := cfg.ProviderTemplate; pt != nil {
				params := make([]*Text, len(pt.Parameters))
				varied := false
				for i, v := range pt.Parameters {
					params[i] = Compile(v)
					varied = varied || params[i].HasPlaceholders()
				}
				if varied {
					c.params = params
				}
			}
			switch t.MessageType {
			case messaging.TypeButtonPlusText, messaging.TypeImagePlusText:
				if u := Compile(cfg.ButtonURL); u.HasPlaceholders() {
					c.texts[fieldButtonURL] = u
				}
			case messaging.TypeFile:
				if u := Compile(cfg.FileURL); u.HasPlaceholders() {
					c.texts[fieldFileURL] = u
				}
			}
		}
	}
	c.names = make(map[string]int)
	for f, t := range c.texts {
		if t == nil {
			continue
		}
		for _, u := range t.uses {
			i, ok := c.names[u.name]
			if !ok {
				i = len(c.uses)
				c.names[u.name] = i
				c.uses = append(c.uses, fieldUses{name: u.name})
			}
			fu := &c.uses[i]
			fu.count[f] += u.count
			if renderedFields[f].url {
				fu.maxURL = max(fu.maxURL, c.max[f]+1)
			} else {
				fu.maxText = max(fu.maxText, c.max[f]+1)
			}
		}
	}
	// The parameters' names are the template's too (a recipient may lack
	// them), counted in no field of limited length.
	for _, p := range c.params {
		for _, u := range p.uses {
			if _, ok := c.names[u.name]; !ok {
				c.names[u.name] = len(c.uses)
				c.uses = append(c.uses, fieldUses{name: u.name})
			}
		}
	}
	c.free = c.Bind(nil)
	return c
}

// HasPlaceholders reports whether any rendered field of the template has a
// placeholder, that is whether messages can differ from one recipient to
// another.
func (c *Compiled) HasPlaceholders() bool { return len(c.uses) > 0 }

// Names returns the placeholder names of the rendered fields, each once,
// in order of first appearance (templateContent first).
func (c *Compiled) Names() []string {
	names := make([]string, len(c.uses))
	for i, u := range c.uses {
		names[i] = u.name
	}
	return names
}

// Render renders one message, as Bind(request).Render(recipient) does.
// Values come from recipient first, then from request; a name in neither
// stays as written (see Text.Render). Values put into a URL are escaped as
// Text.RenderURL describes. A message that would exceed a field's limit
// is a *TooLongError, found before anything is rendered.
func (c *Compiled) Render(recipient, request map[string]string) (Rendered, error) {
	b := c.free
	if len(request) > 0 {
		b = c.Bind(request)
	}
	return b.Render(recipient)
}

// Bound is a Compiled with the request-level values of one send: they are
// measured once, by Bind, so that checking a recipient costs in proportion
// to the recipient's own values only, however large the request-level
// ones and however often they occur. It is immutable and safe for
// concurrent use.
type Bound struct {
	c       *Compiled
	request map[string]string
	base    [numFields]int // each field's length without recipient values
	vals    []measured     // per use of c: the request value (or the placeholder as written)
}

// measured is the length of one value in a field, in that field's unit
// (see Bound.measure), and whether it came from the request.
type measured struct {
	text, url int
	found     bool
}

// Bind measures the request-level values for the recipients of one send.
// request may be nil. It reads each request value the template uses once,
// and no further than Bound.Fits would read a recipient's.
func (c *Compiled) Bind(request map[string]string) *Bound {
	b := &Bound{c: c, request: request, vals: make([]measured, len(c.uses))}
	for f, t := range c.texts {
		if t == nil {
			continue
		}
		if renderedFields[f].url {
			b.base[f] = t.litLen
		} else {
			b.base[f] = t.litRunes
		}
	}
	for i, u := range c.uses {
		v, ok := request[u.name]
		m := b.measure(&c.uses[i], v, ok)
		b.vals[i] = m
		b.add(&b.base, u, m)
	}
	return b
}

// measure returns the length of the rendering of placeholder u with value
// v (found) or as written, as text and as URL. A value's length is
// clamped at one more than the largest limit of the fields it is rendered
// into: the totals are exact up to the limits and "at least" beyond,
// measuring a value costs at most a few times that limit whatever its
// size, and no total can overflow (it is at most the template's length
// times a limit).
func (b *Bound) measure(u *fieldUses, v string, found bool) measured {
	if !found {
		n := len(u.name) + 4 // {{name}}
		return measured{text: n, url: n}
	}
	m := measured{found: true}
	if u.maxText > 0 {
		m.text = runeCountUpTo(v, u.maxText)
	}
	if u.maxURL > 0 {
		m.url = escapedLenUpTo(v, u.maxURL)
	}
	return m
}

// add adds the occurrences of u rendered as m to the field lengths.
func (b *Bound) add(lens *[numFields]int, u fieldUses, m measured) {
	for f, n := range u.count {
		if renderedFields[f].url {
			lens[f] += n * m.url
		} else {
			lens[f] += n * m.text
		}
	}
}

// lengths returns the length of each rendered field for recipient, exact
// up to the field's limit and at least the limit plus one beyond it. It
// costs about the smaller of the recipient's number of values and the
// template's number of placeholder names (a map lookup each), plus at
// most a few times a limit per recipient value used, and does not
// allocate.
func (b *Bound) lengths(recipient map[string]string) [numFields]int {
	c := b.c
	lens := b.base
	// Looking every name up costs less than walking a map, up to a few
	// names more than the recipient has values.
	if len(recipient)+8 < len(c.uses) {
		for k, v := range recipient {
			if i, ok := c.names[k]; ok {
				b.swap(&lens, i, v)
			}
		}
	} else {
		for i := range c.uses {
			if v, ok := recipient[c.uses[i].name]; ok {
				b.swap(&lens, i, v)
			}
		}
	}
	return lens
}

// swap replaces in lens the occurrences of use i as Bind measured them by
// their rendering with the recipient's value v.
func (b *Bound) swap(lens *[numFields]int, i int, v string) {
	u := &b.c.uses[i]
	old, m := b.vals[i], b.measure(u, v, true)
	for f, n := range u.count {
		if renderedFields[f].url {
			lens[f] += n * (m.url - old.url)
		} else {
			lens[f] += n * (m.text - old.text)
		}
	}
}

// Fits reports whether the message of recipient stays within every
// field's limit. It renders nothing and does not allocate.
func (b *Bound) Fits(recipient map[string]string) bool {
	lens := b.lengths(recipient)
	for f, t := range b.c.texts {
		if t != nil && lens[f] > b.c.max[f] {
			return false
		}
	}
	return true
}

// Check returns nil when the message of recipient fits (see Fits), else
// a *TooLongError on the first field that does not, naming the value that
// takes the most room in it. Fits is the cheaper question when the
// details are not needed.
func (b *Bound) Check(recipient map[string]string) error {
	lens := b.lengths(recipient)
	for f, t := range b.c.texts {
		if t == nil || lens[f] <= b.c.max[f] {
			continue
		}
		e := &TooLongError{Field: renderedFields[f].path, Length: lens[f], Max: b.c.max[f], Bytes: renderedFields[f].url}
		most := 0
		for i, u := range b.c.uses {
			n := u.count[f]
			if n == 0 {
				continue
			}
			m, fromRequest := b.vals[i], true
			if v, ok := recipient[u.name]; ok {
				m, fromRequest = b.measure(&b.c.uses[i], v, true), false
			}
			size := m.text
			if e.Bytes {
				size = m.url
			}
			if m.found && n*size > most {
				most, e.Placeholder, e.FromRequest = n*size, u.name, fromRequest
			}
		}
		return e
	}
	return nil
}

// Render renders the message of recipient: values come from recipient
// first, then from the request values of Bind. When a field would exceed
// its limit it returns Check's *TooLongError and renders nothing, so a
// rendering never holds more than the limits allow.
func (b *Bound) Render(recipient map[string]string) (Rendered, error) {
	if !b.Fits(recipient) {
		return Rendered{}, b.Check(recipient)
	}
	c := b.c
	r := Rendered{Content: c.texts[fieldContent].Render(recipient, b.request)}
	if t := c.texts[fieldFallback]; t != nil {
		r.FallbackContent = t.Render(recipient, b.request)
	}
	bu, fu := c.texts[fieldButtonURL], c.texts[fieldFileURL]
	if bu != nil || fu != nil {
		cfg := *c.config
		if bu != nil {
			cfg.ButtonURL = bu.RenderURL(recipient, b.request)
		}
		if fu != nil {
			cfg.FileURL = fu.RenderURL(recipient, b.request)
		}
		r.Config = &cfg
	}
	if c.params != nil {
		if r.Config == nil {
			cfg := *c.config
			r.Config = &cfg
		}
		pt := *c.config.ProviderTemplate
		pt.Parameters = make([]string, len(c.params))
		for i, p := range c.params {
			pt.Parameters[i] = p.Render(recipient, b.request)
		}
		r.Config.ProviderTemplate = &pt
	}
	return r, nil
}

// TooLongError is a message whose rendering would exceed the limit of one
// of its template's fields.
type TooLongError struct {
	// Field is the JSON path of the template field: templateContent,
	// smsFallbackTemplateContent, typeSpecificConfig.buttonUrl or
	// typeSpecificConfig.fileUrl.
	Field string
	// Length is the rendered length, in code points (bytes for a URL);
	// beyond Max it may be a lower bound (see Bound).
	Length int
	// Max is the field's limit.
	Max int
	// Bytes tells that Length and Max count bytes (a URL field).
	Bytes bool
	// Placeholder is the name whose value takes the most room in the
	// field; "" when no value was given (the text as written is too
	// long).
	Placeholder string
	// FromRequest tells that the value of Placeholder is a request-level
	// value, not the recipient's own.
	FromRequest bool
}

// Error implements error.
func (e *TooLongError) Error() string {
	unit := "characters"
	if e.Bytes {
		unit = "bytes"
	}
	msg := fmt.Sprintf("the rendered %s would be longer than the %d %s allowed", FieldName(e.Field), e.Max, unit)
	if e.Placeholder != "" {
		msg += " (the value of " + e.Placeholder + " takes the most room)"
	}
	return msg
}

// runeCountUpTo returns the number of code points of s, or limit when s
// has at least limit of them, reading no further than that.
func runeCountUpTo(s string, limit int) int {
	if len(s) <= limit {
		return utf8.RuneCountInString(s)
	}
	n := 0
	for i := 0; i < len(s) && n < limit; n++ {
		if s[i] < utf8.RuneSelf {
			i++
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return n
}

// escapedLenUpTo returns escapedLen(s), or at least limit when that is
// limit or more, reading no further than needed.
func escapedLenUpTo(s string, limit int) int {
	if len(s) >= limit {
		return limit // every byte counts at least one
	}
	return escapedLen(s)
}
