package metawhatsapp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chatprovider"
)

// Name is the provider's name in the admin API.
const Name = "meta-whatsapp"

// APIVersion is the Graph API version Herald speaks.
const APIVersion = "v23.0"

// BaseURL is the provider's public endpoint, the Graph API with its
// version: a service's baseUrl replaces it (another version, a proxy).
const BaseURL = "https://graph.facebook.com/" + APIVersion

// Limits of the WhatsApp shapes Herald sends, from the reference.
const (
	MaxButtonLabel      = 20       // cta_url display_text, reply button title, list button
	MaxListRowTitle     = 24       // list row title
	MaxButtonOptions    = 3        // reply buttons in one message
	MaxListRows         = 10       // rows of a list message
	MaxCarouselCards    = 10       // cards of a carousel message
	MaxCarouselCardBody = 160      // card body text
	MaxVideoBytes       = 16 << 20 // a video's size
	MaxCaption          = 1024     // media caption
	MaxInteractiveBody  = 1024     // body text of button, cta_url and carousel messages
)

// Credentials is a meta-whatsapp service's credentials object.
type Credentials struct {
	// AccessToken is the system user's token sent as a Bearer token.
	AccessToken string `json:"accessToken"`
	// AppSecret keys the X-Hub-Signature-256 of webhooks.
	AppSecret string `json:"appSecret"`
	// VerifyToken is the token Meta's GET verification must carry.
	VerifyToken string `json:"verifyToken"`
}

// Provider describes the WhatsApp Business Cloud API to the chat router.
func Provider() chatprovider.Provider {
	return chatprovider.Provider{
		Name:             Name,
		BaseURL:          BaseURL,
		Channels:         []string{chatprovider.ChannelWhatsApp},
		Carries:          Carries,
		CheckCredentials: CheckCredentials,
		New: func(ctx context.Context, s chatprovider.Settings) (chatprovider.Adapter, error) {
			a, err := New(ctx, s)
			if err != nil {
				return nil, err
			}
			return a, nil
		},
	}
}

// ParseCredentials reads and checks a credentials object: an Invalid
// *messaging.Error names each missing field ("credentials.appSecret").
func ParseCredentials(raw json.RawMessage) (Credentials, error) {
	var c Credentials
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return c, messaging.Invalidf("credentials", "credentials must be a JSON object with accessToken, appSecret and verifyToken")
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return c, messaging.Invalidf("credentials", "credentials must be a JSON object of strings: %v", err)
	}
	var fe messaging.FieldErrors
	for _, f := range [...]struct{ name, v string }{
		{"accessToken", c.AccessToken}, {"appSecret", c.AppSecret}, {"verifyToken", c.VerifyToken},
	} {
		if strings.TrimSpace(f.v) == "" {
			fe.Add("credentials."+f.name, "credentials.%s is required", f.name)
		}
	}
	return c, fe.Err()
}

// CheckCredentials is Provider().CheckCredentials: the channel must be
// WhatsApp and creds must hold accessToken, appSecret and verifyToken.
func CheckCredentials(channel string, creds json.RawMessage) error {
	if err := checkChannel(channel); err != nil {
		return err
	}
	_, err := ParseCredentials(creds)
	return err
}

func checkChannel(channel string) error {
	if channel != chatprovider.ChannelWhatsApp {
		return messaging.Invalidf("channel", "provider %s reaches the %s channel only, not %q", Name, chatprovider.ChannelWhatsApp, channel)
	}
	return nil
}

// documentTypes are the fileTypes WhatsApp shows as documents.
func documentTypes() []string {
	return []string{"PDF", "DOC", "DOCX", "XLS", "XLSX", "PPT", "PPTX", "TXT"}
}

func isDocumentType(s string) bool {
	for _, t := range documentTypes() {
		if strings.EqualFold(s, t) {
			return true
		}
	}
	return false
}

const configPrefix = "typeSpecificConfig."

// Carries is Provider().Carries: nil when WhatsApp can show a message of
// type t with config c, else an Invalid *messaging.Error naming each field
// it cannot carry.
func Carries(channel string, t messaging.MessageType, c messaging.ChatConfig) error {
	if err := checkChannel(channel); err != nil {
		return err
	}
	if !t.Valid() {
		return messaging.Invalidf("messageType", "messageType must be an integer from 1 to 8")
	}
	var fe messaging.FieldErrors
	if pt := c.ProviderTemplate; pt != nil {
		checkTemplate(&fe, t, c)
		return fe.Err()
	}
	switch t {
	case messaging.TypeButtonPlusText, messaging.TypeImagePlusText:
		checkLabel(&fe, configPrefix+"buttonText", c.ButtonText, MaxButtonLabel)
	case messaging.TypeCarousel:
		if len(c.Items) > MaxCarouselCards {
			fe.Add(configPrefix+"items", "WhatsApp shows at most %d carousel cards, got %d", MaxCarouselCards, len(c.Items))
		}
		for i, it := range c.Items {
			p := configPrefix + "items[" + strconv.Itoa(i) + "]."
			checkLabel(&fe, p+"buttonText", it.ButtonText, MaxButtonLabel)
			checkLen(&fe, p+"title", it.Title, MaxCarouselCardBody)
			if it.SecondaryButtonText != "" || it.SecondaryButtonURL != "" {
				fe.Add(p+"secondaryButtonText", "a WhatsApp carousel card has one URL button only")
			}
		}
	case messaging.TypeSurvey:
		checkOptions(&fe, c.Options)
		if len(c.Options) > MaxButtonOptions && c.ButtonText != "" {
			checkLabel(&fe, configPrefix+"buttonText", c.ButtonText, MaxButtonLabel)
		}
	case messaging.TypeVideo:
		if c.FileSize > MaxVideoBytes {
			fe.Add(configPrefix+"fileSize", "a WhatsApp video must be at most 16 MB")
		}
		if c.ButtonText != "" {
			checkLabel(&fe, configPrefix+"buttonText", c.ButtonText, MaxButtonLabel)
		}
	case messaging.TypeFile:
		if !isDocumentType(c.FileType) {
			fe.Add(configPrefix+"fileType", "WhatsApp documents are %s", strings.Join(documentTypes(), ", "))
		}
	}
	return fe.Err()
}

// checkOptions checks a survey's options: reply buttons up to three,
// list rows beyond.
func checkOptions(fe *messaging.FieldErrors, opts []messaging.SurveyOption) {
	if len(opts) > MaxListRows {
		fe.Add(configPrefix+"options", "WhatsApp shows at most %d options, got %d", MaxListRows, len(opts))
		return
	}
	max := MaxListRowTitle
	if len(opts) <= MaxButtonOptions {
		max = MaxButtonLabel
	}
	seen := map[string]bool{}
	for i, o := range opts {
		f := configPrefix + "options[" + strconv.Itoa(i) + "].optionText"
		checkLabel(fe, f, o.OptionText, max)
		if seen[o.OptionText] {
			fe.Add(f, "WhatsApp needs each option's text to differ from the others")
		}
		seen[o.OptionText] = true
	}
}

// validTemplateName: 1 to 512 lower-case letters, digits and underscores.
func validTemplateName(s string) bool {
	return len(s) >= 1 && len(s) <= 512 && onlyOf(s, "abcdefghijklmnopqrstuvwxyz0123456789_")
}

// validLanguage: a language code of 2 or 3 lower-case letters, with an
// optional region of 2 to 4 letters after an underscore (en, en_US).
func validLanguage(s string) bool {
	lang, region, hasRegion := strings.Cut(s, "_")
	if len(lang) < 2 || len(lang) > 3 || !onlyOf(lang, "abcdefghijklmnopqrstuvwxyz") {
		return false
	}
	if !hasRegion {
		return true
	}
	return len(region) >= 2 && len(region) <= 4 && onlyOf(region, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
}

func onlyOf(s, chars string) bool {
	for _, r := range s {
		if !strings.ContainsRune(chars, r) {
			return false
		}
	}
	return true
}

// checkTemplate checks a message sent as an approved template: its name
// and language, and the header media the type brings.
func checkTemplate(fe *messaging.FieldErrors, t messaging.MessageType, c messaging.ChatConfig) {
	p := configPrefix + "providerTemplate."
	if !validTemplateName(c.ProviderTemplate.Name) {
		fe.Add(p+"name", "a WhatsApp template name is lower-case letters, digits and underscores")
	}
	if !validLanguage(c.ProviderTemplate.Language) {
		fe.Add(p+"language", "a WhatsApp template language is a code such as en or en_US")
	}
	switch t {
	case messaging.TypeCarousel:
		fe.Add("messageType", "a carousel cannot go as a WhatsApp template message")
	case messaging.TypeSurvey:
		if len(c.Options) > MaxListRows {
			fe.Add(configPrefix+"options", "a WhatsApp template has at most %d quick-reply buttons", MaxListRows)
		}
	case messaging.TypeFile:
		if !strings.EqualFold(c.FileType, "PDF") {
			fe.Add(configPrefix+"fileType", "a WhatsApp template's document header is a PDF")
		}
	case messaging.TypeVideo:
		if c.FileSize > MaxVideoBytes {
			fe.Add(configPrefix+"fileSize", "a WhatsApp video must be at most 16 MB")
		}
	}
}

func checkLabel(fe *messaging.FieldErrors, field, s string, max int) {
	if strings.TrimSpace(s) == "" {
		fe.Add(field, "%s is required", fieldName(field))
		return
	}
	checkLen(fe, field, s, max)
}

func checkLen(fe *messaging.FieldErrors, field, s string, max int) {
	if n := utf8.RuneCountInString(s); n > max {
		fe.Add(field, "WhatsApp shows at most %d characters in %s, got %d", max, fieldName(field), n)
	}
}

func fieldName(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[i+1:]
	}
	return path
}

// errorf is fmt.Errorf with the package's prefix.
func errorf(format string, args ...any) error {
	return fmt.Errorf("metawhatsapp: "+format, args...)
}
