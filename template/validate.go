package template

import (
	"errors"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/heraldhq/herald/messaging"
)

// Limits of templates, in Unicode code points unless stated otherwise.
const (
	MaxNameLen           = 200  // template name (the API sets none; Herald's choice)
	MaxDescriptionLen    = 500  // template description
	MaxSMSContentLen     = 1600 // SMS template content and SMS fallback content
	MaxChatContentLen    = 1000 // templateContent of every chat type but Survey
	MaxSurveyQuestionLen = 85   // templateContent of a Survey
	MaxButtonTextLen     = 30   // buttonText of ButtonPlusText, ImagePlusText and Video
	MinCarouselItems     = 2
	MaxCarouselItems     = 5
	MinCarouselTitleLen  = 2
	MaxCarouselTitleLen  = 38
	MaxCarouselButtonLen = 10 // primary button text of a carousel item
	MaxCarouselSecondLen = 12 // secondary button text of a carousel item
	MinSurveyOptions     = 2
	MaxSurveyOptions     = 5
	MaxSurveyOptionLen   = 50   // optionText
	MaxSurveyValueLen    = 100  // optionValue (the API sets none; Herald's choice)
	MaxFileNameLen       = 255  // fileName (the API sets none; Herald's choice)
	MaxURLLen            = 2048 // every URL, in bytes (the API sets none; Herald's choice)
	MaxImageBytes        = 1 << 20
	MaxVideoBytes        = 200 << 20
	MaxFileBytes         = 200 << 20
	MaxThumbnailBytes    = MaxImageBytes
)

const (
	configPrefix          = "typeSpecificConfig."
	placeholdersForbidden = "placeholders are not supported in %s"
)

// FileTypes returns the accepted fileType values of a File (type 8)
// template. fileType is compared without regard to case.
func FileTypes() []string {
	return []string{"PDF", "DOC", "DOCX", "TXT", "RTF", "XLS", "XLSX", "CSV", "PPT", "PPTX", "ZIP", "RAR"}
}

// ValidFileType reports whether s is one of FileTypes, in any case.
func ValidFileType(s string) bool {
	for _, ft := range FileTypes() {
		if strings.EqualFold(s, ft) {
			return true
		}
	}
	return false
}

// Validate checks every rule of the API that t can be checked against by
// itself and returns nil or an Invalid *messaging.Error whose Fields name
// each failing field by its JSON path. It does not check what needs a
// store or the network: name uniqueness, that chatServiceId,
// smsSenderId and smsFallbackSenderId exist, belong to the company and are
// approved, and media reachability (ValidateMedia).
func Validate(t *messaging.Template) error { return Check(t).Err() }

// Check is Validate returning the field errors themselves, so that a caller
// can add its own (a duplicate name, an unknown chat service) before
// turning them into an error with FieldErrors.Err.
func Check(t *messaging.Template) messaging.FieldErrors {
	var fe messaging.FieldErrors
	checkText(&fe, "name", t.Name, true, MaxNameLen)
	checkText(&fe, "description", t.Description, false, MaxDescriptionLen)
	switch t.Channel {
	case messaging.ChannelSMS:
		checkSMS(&fe, t)
	case messaging.ChannelChat:
		checkChat(&fe, t)
	default:
		fe.Add("channelType", "channelType must be %s or %s", messaging.ChannelSMS, messaging.ChannelChat)
	}
	return fe
}

// checkSMS checks an SMS template. Chat-only fields are not looked at.
func checkSMS(fe *messaging.FieldErrors, t *messaging.Template) {
	if t.MessageType != 0 && t.MessageType != messaging.TypeSimpleText {
		fe.Add("messageType", "SMS templates have messageType 1")
	}
	checkText(fe, "templateContent", t.Content, true, MaxSMSContentLen)
	if t.SMSSenderID < 0 {
		fe.Add("smsSenderId", "smsSenderId must be a positive id")
	}
}

// contentRequired reports whether templateContent is required for a chat
// message type.
func contentRequired(mt messaging.MessageType) bool {
	switch mt {
	case messaging.TypeSimpleText, messaging.TypeButtonPlusText, messaging.TypeImagePlusText, messaging.TypeSurvey:
		return true
	}
	return false
}

func checkChat(fe *messaging.FieldErrors, t *messaging.Template) {
	mt := t.MessageType
	if !mt.Valid() {
		fe.Add("messageType", "messageType must be an integer from 1 to 8")
	}
	if t.ChatServiceID <= 0 {
		fe.Add("chatServiceId", "chatServiceId is required")
	}
	maxContent := MaxChatContentLen
	if mt == messaging.TypeSurvey {
		maxContent = MaxSurveyQuestionLen
	}
	checkText(fe, "templateContent", t.Content, contentRequired(mt), maxContent)

	if t.SMSFallbackEnabled {
		checkText(fe, "smsFallbackTemplateContent", t.SMSFallbackContent, true, MaxSMSContentLen)
		if t.SMSFallbackSenderID <= 0 {
			fe.Add("smsFallbackSenderId", "smsFallbackSenderId is required when smsFallbackEnabled is true")
		}
	}

	c := t.Config
	if c == nil {
		c = &messaging.ChatConfig{} // a missing config reports its missing fields one by one
	}
	// Fields that do not belong to the type are ignored but stored: their
	// characters are checked all the same, after the type's own rules.
	defer checkConfigChars(fe, c)
	switch mt {
	case messaging.TypeImageOnly:
		checkURL(fe, "imageUrl", c.ImageURL, true, false)
	case messaging.TypeButtonPlusText:
		checkText(fe, configPrefix+"buttonText", c.ButtonText, true, MaxButtonTextLen)
		checkURL(fe, "buttonUrl", c.ButtonURL, true, true)
	case messaging.TypeImagePlusText:
		checkURL(fe, "imageUrl", c.ImageURL, true, false)
		checkText(fe, configPrefix+"buttonText", c.ButtonText, true, MaxButtonTextLen)
		checkURL(fe, "buttonUrl", c.ButtonURL, true, true)
	case messaging.TypeCarousel:
		checkCarousel(fe, c.Items)
	case messaging.TypeSurvey:
		checkSurvey(fe, c.Options)
	case messaging.TypeVideo:
		checkVideo(fe, c)
	case messaging.TypeFile:
		checkURL(fe, "fileUrl", c.FileURL, true, true)
		checkText(fe, configPrefix+"fileName", c.FileName, true, MaxFileNameLen)
		CheckFieldChars(fe, configPrefix+"fileType", c.FileType)
		if strings.TrimSpace(c.FileType) == "" {
			fe.Add(configPrefix+"fileType", "fileType is required")
		} else if !ValidFileType(c.FileType) {
			fe.Add(configPrefix+"fileType", "fileType must be one of %s", strings.Join(FileTypes(), ", "))
		}
	}
}

func checkCarousel(fe *messaging.FieldErrors, items []messaging.CarouselItem) {
	if n := len(items); n < MinCarouselItems || n > MaxCarouselItems {
		fe.Add(configPrefix+"items", "a carousel needs %d to %d items, got %d", MinCarouselItems, MaxCarouselItems, n)
	}
	for i, it := range items {
		p := "items[" + strconv.Itoa(i) + "]."
		checkRange(fe, configPrefix+p+"title", it.Title, MinCarouselTitleLen, MaxCarouselTitleLen)
		checkURL(fe, p+"imageUrl", it.ImageURL, true, false)
		checkText(fe, configPrefix+p+"buttonText", it.ButtonText, true, MaxCarouselButtonLen)
		checkURL(fe, p+"buttonUrl", it.ButtonURL, true, false)
		hasText := strings.TrimSpace(it.SecondaryButtonText) != ""
		switch {
		case hasText:
			checkText(fe, configPrefix+p+"secondaryButtonText", it.SecondaryButtonText, true, MaxCarouselSecondLen)
			checkURL(fe, p+"secondaryButtonUrl", it.SecondaryButtonURL, true, false)
		case it.SecondaryButtonText != "":
			fe.Add(configPrefix+p+"secondaryButtonText", "secondaryButtonText must not be blank")
		case it.SecondaryButtonURL != "":
			fe.Add(configPrefix+p+"secondaryButtonText", "secondaryButtonText is required when secondaryButtonUrl is given")
		}
	}
}

func checkSurvey(fe *messaging.FieldErrors, opts []messaging.SurveyOption) {
	if n := len(opts); n < MinSurveyOptions || n > MaxSurveyOptions {
		fe.Add(configPrefix+"options", "a survey needs %d to %d options, got %d", MinSurveyOptions, MaxSurveyOptions, n)
	}
	for i, o := range opts {
		p := configPrefix + "options[" + strconv.Itoa(i) + "]."
		checkText(fe, p+"optionText", o.OptionText, true, MaxSurveyOptionLen)
		checkText(fe, p+"optionValue", o.OptionValue, true, MaxSurveyValueLen)
	}
}

func checkVideo(fe *messaging.FieldErrors, c *messaging.ChatConfig) {
	checkURL(fe, "videoUrl", c.VideoURL, true, false)
	checkURL(fe, "thumbnailUrl", c.ThumbnailURL, false, false)
	hasText, hasURL := c.ButtonText != "", c.ButtonURL != ""
	if hasText || hasURL {
		checkText(fe, configPrefix+"buttonText", c.ButtonText, true, MaxButtonTextLen)
		checkURL(fe, "buttonUrl", c.ButtonURL, true, false)
	}
	if c.FileSize < 0 {
		fe.Add(configPrefix+"fileSize", "fileSize must not be negative")
	} else if c.FileSize > MaxVideoBytes {
		fe.Add(configPrefix+"fileSize", "a video must be at most 200 MB")
	}
	if c.Duration < 0 {
		fe.Add(configPrefix+"duration", "duration must not be negative")
	}
}

// checkConfigChars applies CheckChars to every text of a chat config.
func checkConfigChars(fe *messaging.FieldErrors, c *messaging.ChatConfig) {
	for _, f := range [...]struct{ name, s string }{
		{"imageUrl", c.ImageURL}, {"buttonText", c.ButtonText}, {"buttonUrl", c.ButtonURL},
		{"videoUrl", c.VideoURL}, {"thumbnailUrl", c.ThumbnailURL}, {"fileUrl", c.FileURL},
		{"fileName", c.FileName}, {"fileType", c.FileType},
	} {
		CheckFieldChars(fe, configPrefix+f.name, f.s)
	}
	for i, it := range c.Items {
		p := configPrefix + "items[" + strconv.Itoa(i) + "]."
		for _, f := range [...]struct{ name, s string }{
			{"title", it.Title}, {"imageUrl", it.ImageURL}, {"buttonText", it.ButtonText},
			{"buttonUrl", it.ButtonURL}, {"secondaryButtonText", it.SecondaryButtonText},
			{"secondaryButtonUrl", it.SecondaryButtonURL},
		} {
			CheckFieldChars(fe, p+f.name, f.s)
		}
	}
	for i, o := range c.Options {
		p := configPrefix + "options[" + strconv.Itoa(i) + "]."
		CheckFieldChars(fe, p+"optionText", o.OptionText)
		CheckFieldChars(fe, p+"optionValue", o.OptionValue)
	}
}

// FieldName is the last element of a JSON path (field "recipients[0].name"
// is named "name"), for error messages.
func FieldName(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[i+1:]
	}
	return path
}

// checkText checks a text field: required means not blank (white space
// only counts as missing); max is in code points.
func checkText(fe *messaging.FieldErrors, field, s string, required bool, max int) {
	name := FieldName(field)
	if required && strings.TrimSpace(s) == "" {
		fe.Add(field, "%s is required", name)
		return
	}
	CheckFieldChars(fe, field, s)
	if n := utf8.RuneCountInString(s); n > max {
		fe.Add(field, "%s must be at most %d characters, got %d", name, max, n)
	}
}

// checkRange checks a required text of min to max code points.
func checkRange(fe *messaging.FieldErrors, field, s string, min, max int) {
	name := FieldName(field)
	if strings.TrimSpace(s) == "" {
		fe.Add(field, "%s is required", name)
		return
	}
	CheckFieldChars(fe, field, s)
	if n := utf8.RuneCountInString(s); n < min || n > max {
		fe.Add(field, "%s must be %d to %d characters, got %d", name, min, max, n)
	}
}

// checkURL checks a URL field of the type-specific config (field is its
// path below typeSpecificConfig).
func checkURL(fe *messaging.FieldErrors, field, raw string, required, placeholders bool) {
	name := FieldName(field)
	if raw == "" {
		if required {
			fe.Add(configPrefix+field, "%s is required", name)
		}
		return
	}
	if !placeholders && HasPlaceholders(raw) {
		fe.Add(configPrefix+field, placeholdersForbidden, name)
		return
	}
	if msg := urlProblem(raw); msg != "" {
		fe.Add(configPrefix+field, "%s %s", name, msg)
	}
}

// CheckHTTPSURL returns nil when raw is an absolute https URL with a valid
// host, no credentials, no white space or control characters and at most
// MaxURLLen bytes. Placeholders are left in while checking: they may
// appear in the path, query or fragment, never in the scheme or host. The
// error is a plain error saying what is wrong, for the caller to attach to
// its own field.
func CheckHTTPSURL(raw string) error {
	if msg := urlProblem(raw); msg != "" {
		return errors.New("URL " + msg)
	}
	return nil
}

// urlProblem returns "" for a valid HTTPS URL, else what is wrong with it,
// phrased to follow the field name.
func urlProblem(raw string) string {
	if len(raw) > MaxURLLen {
		return "must be at most " + strconv.Itoa(MaxURLLen) + " characters"
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] <= ' ' || raw[i] == 0x7f {
			return "must not contain spaces or control characters"
		}
	}
	if !utf8.ValidString(raw) {
		return "must be valid UTF-8"
	}
	if len(raw) < 8 || !strings.EqualFold(raw[:8], "https://") {
		return "must be an HTTPS URL (https://...)"
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "is not a valid URL"
	}
	if u.User != nil {
		return "must not contain credentials"
	}
	if !validHost(u.Hostname()) {
		return "has an invalid host"
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "has an invalid port"
		}
	}
	return ""
}

// validHost accepts an IP address or a DNS name: dot-separated labels of
// 1-63 letters, digits, hyphens or non-ASCII letters (internationalised
// names), not starting or ending with a hyphen, 253 bytes at most.
func validHost(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	for label := range strings.SplitSeq(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c >= 0x80) {
				return false
			}
		}
	}
	return true
}
