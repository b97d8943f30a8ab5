package template

import "github.com/heraldhq/herald/messaging"

// Compiled is a template compiled for rendering many messages: its
// templateContent, its SMS fallback content and, for chat templates, the
// type-specific URLs that take placeholders (buttonUrl of ButtonPlusText
// and ImagePlusText, fileUrl of File). It is immutable and safe for
// concurrent use.
type Compiled struct {
	content   *Text
	fallback  *Text // nil unless the SMS fallback is enabled
	buttonURL *Text // nil unless it has placeholders
	fileURL   *Text // nil unless it has placeholders
	config    *messaging.ChatConfig
}

// Rendered is one message rendered from a template.
type Rendered struct {
	// Content is the rendered templateContent.
	Content string
	// Config is nil when the template's Config applies unchanged; else a
	// copy of it with buttonUrl or fileUrl rendered for this recipient,
	// to be stored as the message's own Config. It is a shallow copy: its
	// Items and Options slices (unused by the types that get one) are the
	// template's.
	Config *messaging.ChatConfig
	// FallbackContent is the rendered SMS fallback text of a chat
	// template with the fallback enabled, else "".
	FallbackContent string
}

// CompileTemplate compiles t for rendering. imageUrl, videoUrl,
// thumbnailUrl, carousel URLs and fileName are never rendered: the spec
// supports placeholders in templateContent, buttonUrl (types 3 and 4) and
// fileUrl (type 8) only, and in smsFallbackTemplateContent. Later changes
// to t's fields (but not to the elements of its Items and Options) do not
// affect the compiled form.
func CompileTemplate(t *messaging.Template) *Compiled {
	c := &Compiled{content: Compile(t.Content)}
	if t.Channel != messaging.ChannelChat {
		return c
	}
	if t.SMSFallbackEnabled {
		c.fallback = Compile(t.SMSFallbackContent)
	}
	if t.Config == nil {
		return c
	}
	cfg := *t.Config
	c.config = &cfg
	switch t.MessageType {
	case messaging.TypeButtonPlusText, messaging.TypeImagePlusText:
		if u := Compile(cfg.ButtonURL); u.HasPlaceholders() {
			c.buttonURL = u
		}
	case messaging.TypeFile:
		if u := Compile(cfg.FileURL); u.HasPlaceholders() {
			c.fileURL = u
		}
	}
	return c
}

// Render renders one message. Values come from recipient first, then from
// request; a name in neither stays as written (see Text.Render). Values
// put into a URL are escaped as Text.RenderURL describes.
func (c *Compiled) Render(recipient, request map[string]string) Rendered {
	r := Rendered{Content: c.content.Render(recipient, request)}
	if c.fallback != nil {
		r.FallbackContent = c.fallback.Render(recipient, request)
	}
	if c.buttonURL != nil || c.fileURL != nil {
		cfg := *c.config
		if c.buttonURL != nil {
			cfg.ButtonURL = c.buttonURL.RenderURL(recipient, request)
		}
		if c.fileURL != nil {
			cfg.FileURL = c.fileURL.RenderURL(recipient, request)
		}
		r.Config = &cfg
	}
	return r
}

// HasPlaceholders reports whether any rendered field of the template has a
// placeholder, that is whether messages can differ from one recipient to
// another.
func (c *Compiled) HasPlaceholders() bool {
	return c.content.HasPlaceholders() || c.buttonURL != nil || c.fileURL != nil ||
		c.fallback != nil && c.fallback.HasPlaceholders()
}
