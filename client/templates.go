package client

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"strings"
	"time"
)

// SMSTemplateInput creates an SMS template.
type SMSTemplateInput struct {
	// Name is unique in the company across SMS and chat templates.
	// Required.
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// TemplateContent is the text, with {{placeholders}}. Required.
	TemplateContent string `json:"templateContent"`
	// SMSSenderID is an approved SMS sender of the company (see
	// ListSMSSenders), used by every campaign of the template.
	SMSSenderID int64 `json:"smsSenderId,omitempty"`
	// ValidityPeriod is the default validity of the messages, in seconds
	// (60 to 604800); 0: none.
	ValidityPeriod int `json:"validityPeriod,omitempty"`
}

// ChatTemplateInput creates a chat template.
type ChatTemplateInput struct {
	// Name is unique in the company across SMS and chat templates.
	// Required.
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// MessageType is the chat message type. Required.
	MessageType MessageType `json:"messageType"`
	// TemplateContent is the text, with {{placeholders}}: required for
	// SimpleText, ButtonPlusText, ImagePlusText and Survey (the
	// question).
	TemplateContent string `json:"templateContent,omitempty"`
	// ChatServiceID is a chat service of the company (see
	// ListChatServices). Required.
	ChatServiceID int64 `json:"chatServiceId"`
	// TypeSpecificConfig is the part of the type: image, buttons, carousel
	// items, survey options, video or file.
	TypeSpecificConfig *ChatConfig `json:"typeSpecificConfig,omitempty"`
	// SMSFallbackEnabled sends SMSFallbackTemplateContent from
	// SMSFallbackSenderID when the chat message cannot reach the person
	// (chat errors 8, 9 and 10).
	SMSFallbackEnabled         bool   `json:"smsFallbackEnabled,omitempty"`
	SMSFallbackTemplateContent string `json:"smsFallbackTemplateContent,omitempty"`
	SMSFallbackSenderID        int64  `json:"smsFallbackSenderId,omitempty"`
	// ValidityPeriod is the default validity of the messages, in seconds
	// (60 to 604800); 0: none.
	ValidityPeriod int `json:"validityPeriod,omitempty"`
}

// TemplateUpdate replaces a template's fields (PUT /templates/{id}): the
// fields of creation for the template's channel, validated the same way;
// the fields of the other channel are ignored, and the channel cannot
// change.
type TemplateUpdate struct {
	Name            string      `json:"name"`
	Description     string      `json:"description,omitempty"`
	MessageType     MessageType `json:"messageType,omitempty"`
	TemplateContent string      `json:"templateContent,omitempty"`
	// SMS templates.
	SMSSenderID int64 `json:"smsSenderId,omitempty"`
	// Chat templates.
	ChatServiceID              int64       `json:"chatServiceId,omitempty"`
	TypeSpecificConfig         *ChatConfig `json:"typeSpecificConfig,omitempty"`
	SMSFallbackEnabled         bool        `json:"smsFallbackEnabled,omitempty"`
	SMSFallbackTemplateContent string      `json:"smsFallbackTemplateContent,omitempty"`
	SMSFallbackSenderID        int64       `json:"smsFallbackSenderId,omitempty"`
	ValidityPeriod             int         `json:"validityPeriod,omitempty"`
}

// ChatConfig is the type-specific part of a chat template; which fields
// count depends on its MessageType.
type ChatConfig struct {
	// ImageURL: ImageOnly and ImagePlusText (HTTPS, JPG or PNG, at most
	// 1 MB).
	ImageURL string `json:"imageUrl,omitempty"`
	// ButtonText and ButtonURL: ButtonPlusText, ImagePlusText (and Video,
	// optionally).
	ButtonText string `json:"buttonText,omitempty"`
	ButtonURL  string `json:"buttonUrl,omitempty"`
	// Items: Carousel, 2 to 5.
	Items []CarouselItem `json:"items,omitempty"`
	// Options: Survey, 2 to 5.
	Options []SurveyOption `json:"options,omitempty"`
	// Video.
	VideoURL     string `json:"videoUrl,omitempty"`
	ThumbnailURL string `json:"thumbnailUrl,omitempty"`
	FileSize     int64  `json:"fileSize,omitempty"`
	Duration     int    `json:"duration,omitempty"`
	// File.
	FileURL  string `json:"fileUrl,omitempty"`
	FileName string `json:"fileName,omitempty"`
	FileType string `json:"fileType,omitempty"`
	// ProviderTemplate: a template approved at the provider, for the
	// services on WhatsApp only (see ChatService.Channel).
	ProviderTemplate *ProviderTemplate `json:"providerTemplate,omitempty"`
}

// ProviderTemplate is a template approved at the chat provider that a
// WhatsApp message goes out as.
type ProviderTemplate struct {
	// Name is the template's name at the provider.
	Name string `json:"name"`
	// Language is its language code, such as "en" or "en_US".
	Language string `json:"language"`
	// Parameters are its parameters in order; each may hold
	// {{placeholders}}, rendered for each recipient like the content.
	Parameters []string `json:"parameters,omitempty"`
}

// CarouselItem is one card of a Carousel.
type CarouselItem struct {
	Title               string `json:"title,omitempty"`
	ImageURL            string `json:"imageUrl,omitempty"`
	ButtonText          string `json:"buttonText,omitempty"`
	ButtonURL           string `json:"buttonUrl,omitempty"`
	SecondaryButtonText string `json:"secondaryButtonText,omitempty"`
	SecondaryButtonURL  string `json:"secondaryButtonUrl,omitempty"`
}

// SurveyOption is one answer of a Survey.
type SurveyOption struct {
	OptionText  string `json:"optionText"`
	OptionValue string `json:"optionValue"`
}

// UnmarshalJSON implements json.Unmarshaler: the API answers the
// configuration as a string holding its JSON.
func (c *ChatConfig) UnmarshalJSON(b []byte) error {
	type plain ChatConfig
	if s := strings.TrimSpace(string(b)); strings.HasPrefix(s, `"`) {
		var inner string
		if err := json.Unmarshal(b, &inner); err != nil {
			return err
		}
		if strings.TrimSpace(inner) == "" {
			*c = ChatConfig{}
			return nil
		}
		b = []byte(inner)
	}
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*c = ChatConfig(p)
	return nil
}

// Template is an SMS or chat template; ChannelType tells which, and which
// fields apply.
type Template struct {
	ID              string      `json:"id"`
	Name            string      `json:"name"`
	Description     string      `json:"description"`
	MessageType     MessageType `json:"messageType"`
	ChannelType     Channel     `json:"channelType"`
	TemplateContent string      `json:"templateContent"`
	// ValidityPeriod is the default validity in seconds; 0: none.
	ValidityPeriod int       `json:"validityPeriod"`
	CreatedAt      time.Time `json:"createdAt"`
	UpdatedAt      time.Time `json:"updatedAt"`
	// SMS templates: the sender (0: none).
	SMSSenderID int64 `json:"smsSenderId"`
	// Chat templates.
	ChatServiceID              int64       `json:"chatServiceId"`
	TypeSpecificConfig         *ChatConfig `json:"typeSpecificConfig"`
	SMSFallbackEnabled         bool        `json:"smsFallbackEnabled"`
	SMSFallbackTemplateContent string      `json:"smsFallbackTemplateContent"`
	SMSFallbackSenderID        int64       `json:"smsFallbackSenderId"`
}

// TemplatePreviewInput asks for the preview of an SMS text.
type TemplatePreviewInput struct {
	// TemplateContent is the text, with {{placeholders}}. Required.
	TemplateContent string `json:"templateContent"`
	// Placeholders are sample values by name.
	Placeholders map[string]string `json:"placeholders,omitempty"`
}

// TemplatePreview is an SMS text rendered with sample values, measured as
// the SMPP transport sends it.
type TemplatePreview struct {
	RenderedText string `json:"renderedText"`
	// Placeholders are the text's placeholder names, each once, in order;
	// MissingPlaceholders those given no value.
	Placeholders        []string `json:"placeholders"`
	MissingPlaceholders []string `json:"missingPlaceholders"`
	// Encoding is "GSM-7" or "UCS-2".
	Encoding string `json:"encoding"`
	// Characters is the length in GSM-7 septets or UTF-16 units; Segments
	// the SMS it takes; CharactersPerSegment 160, 153, 70 or 67;
	// CharactersLeft the room left in the last segment.
	Characters           int `json:"characters"`
	Segments             int `json:"segments"`
	CharactersPerSegment int `json:"charactersPerSegment"`
	CharactersLeft       int `json:"charactersLeft"`
}

// CreateSMSTemplate creates an SMS template (POST /templates/sms).
func (c *Client) CreateSMSTemplate(ctx context.Context, in SMSTemplateInput) (*Template, error) {
	var t Template
	if err := c.do(ctx, http.MethodPost, "/templates/sms", nil, in, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// CreateChatTemplate creates a chat template (POST /templates/chat).
func (c *Client) CreateChatTemplate(ctx context.Context, in ChatTemplateInput) (*Template, error) {
	var t Template
	if err := c.do(ctx, http.MethodPost, "/templates/chat", nil, in, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// PreviewTemplate renders an SMS text with sample values and tells how it
// travels (POST /templates/preview); nothing is stored.
func (c *Client) PreviewTemplate(ctx context.Context, in TemplatePreviewInput) (*TemplatePreview, error) {
	var p TemplatePreview
	if err := c.do(ctx, http.MethodPost, "/templates/preview", nil, in, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// GetTemplate reads a template (GET /templates/{id}).
func (c *Client) GetTemplate(ctx context.Context, id string) (*Template, error) {
	var t Template
	if err := c.do(ctx, http.MethodGet, "/templates/"+seg(id), nil, nil, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// UpdateTemplate replaces a template's fields (PUT /templates/{id});
// messages already rendered keep their text.
func (c *Client) UpdateTemplate(ctx context.Context, id string, in TemplateUpdate) (*Template, error) {
	var t Template
	if err := c.do(ctx, http.MethodPut, "/templates/"+seg(id), nil, in, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// DeleteTemplate deletes a template (DELETE /templates/{id}).
func (c *Client) DeleteTemplate(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/templates/"+seg(id), nil, nil, nil)
}

// ListTemplates returns one page of the company's templates, newest first
// (GET /templates).
func (c *Client) ListTemplates(ctx context.Context, opts PageOptions) (*Page[Template], error) {
	return listPage[Template](ctx, c, "/templates", "templates", opts.values(nil))
}

// AllTemplates iterates over the company's templates, newest first, a page
// of opts.PageSize at a time; it stops at the first error, which it
// yields.
func (c *Client) AllTemplates(ctx context.Context, opts PageOptions) iter.Seq2[Template, error] {
	return all(opts.Page, func(page int) (*Page[Template], error) {
		opts.Page = page
		return c.ListTemplates(ctx, opts)
	})
}
