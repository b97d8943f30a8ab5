package chat

import (
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
)

// TTL bounds of the provider protocol (docs/chat-provider.md), in seconds.
const (
	MinTTLSeconds     = 30
	MaxTTLSeconds     = 1209600 // 14 days
	DefaultTTLSeconds = 86400   // a day, for a message without a TTL
)

// ttlSeconds is the ttl field for d: whole seconds, DefaultTTLSeconds when
// d is zero or negative, clamped to MinTTLSeconds..MaxTTLSeconds.
func ttlSeconds(d time.Duration) int64 {
	if d <= 0 {
		return DefaultTTLSeconds
	}
	return min(max(int64(d/time.Second), MinTTLSeconds), MaxTTLSeconds)
}

// appendRequest appends the send_message body of m.
func appendRequest(b []byte, m *delivery.ChatSend, ttl int64) []byte {
	cfg := m.Config
	b = append(b, `{"service_id":`...)
	b = appendString(b, m.Sender)
	b = append(b, `,"dest":`...)
	b = appendString(b, m.To)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, m.Ref, 10)
	b = append(b, `,"ttl":`...)
	b = strconv.AppendInt(b, ttl, 10)
	b = append(b, `,"type":`...)
	b = strconv.AppendInt(b, int64(m.Type), 10)
	b = append(b, `,"tracking_data":"`...)
	b = appendID(b, m.MessageID)

	// message: text, image and button, as the type uses them.
	b = append(b, `","message":{`...)
	sep := false
	field := func(name string) {
		if sep {
			b = append(b, ',')
		}
		sep = true
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, `":`...)
	}
	if m.Text != "" {
		field("text")
		b = appendString(b, m.Text)
	}
	if (m.Type == messaging.TypeImageOnly || m.Type == messaging.TypeImagePlusText) && cfg.ImageURL != "" {
		field("image")
		b = appendString(b, cfg.ImageURL)
	}
	switch m.Type {
	case messaging.TypeButtonPlusText, messaging.TypeImagePlusText, messaging.TypeVideo:
		if cfg.ButtonText != "" || cfg.ButtonURL != "" {
			field("button")
			b = append(b, `{"caption":`...)
			b = appendString(b, cfg.ButtonText)
			b = append(b, `,"action":`...)
			b = appendString(b, cfg.ButtonURL)
			b = append(b, '}')
		}
	}
	b = append(b, '}')

	switch m.Type {
	case messaging.TypeVideo:
		b = append(b, `,"video":{"url":`...)
		b = appendString(b, cfg.VideoURL)
		if cfg.ThumbnailURL != "" {
			b = append(b, `,"thumbnail_url":`...)
			b = appendString(b, cfg.ThumbnailURL)
		}
		b = append(b, `,"file_size":`...)
		b = strconv.AppendInt(b, cfg.FileSize, 10)
		b = append(b, `,"duration":`...)
		b = strconv.AppendInt(b, int64(cfg.Duration), 10)
		b = append(b, '}')
	case messaging.TypeFile:
		b = append(b, `,"file":{"url":`...)
		b = appendString(b, cfg.FileURL)
		b = append(b, `,"file_name":`...)
		b = appendString(b, cfg.FileName)
		b = append(b, `,"file_type":`...)
		b = appendString(b, fileType(cfg.FileType, cfg.FileName))
		b = append(b, '}')
	case messaging.TypeCarousel:
		b = append(b, `,"carousel":{"items":[`...)
		for i, it := range cfg.Items {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"title":`...)
			b = appendString(b, it.Title)
			b = append(b, `,"image_url":`...)
			b = appendString(b, it.ImageURL)
			b = append(b, `,"primary_button":{"label":`...)
			b = appendString(b, it.ButtonText)
			b = append(b, `,"action_url":`...)
			b = appendString(b, it.ButtonURL)
			b = append(b, '}')
			if it.SecondaryButtonText != "" || it.SecondaryButtonURL != "" {
				b = append(b, `,"secondary_button":{"label":`...)
				b = appendString(b, it.SecondaryButtonText)
				b = append(b, `,"action_url":`...)
				b = appendString(b, it.SecondaryButtonURL)
				b = append(b, '}')
			}
			b = append(b, '}')
		}
		b = append(b, "]}"...)
	case messaging.TypeSurvey:
		b = append(b, `,"survey":{"options":[`...)
		for i, o := range cfg.Options {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"text":`...)
			b = appendString(b, o.OptionText)
			b = append(b, `,"value":`...)
			b = appendString(b, o.OptionValue)
			b = append(b, '}')
		}
		b = append(b, "]}"...)
	}
	return append(b, '}')
}

// fileType is the lower-case file_type: the configured one, else the
// extension of the file name.
func fileType(typ, name string) string {
	if typ == "" {
		typ = strings.TrimPrefix(path.Ext(name), ".")
	}
	return strings.ToLower(typ)
}

// appendID appends the canonical form of id (no quotes).
func appendID(b []byte, id messaging.ID) []byte {
	t, _ := id.MarshalText() // never fails
	return append(b, t...)
}

// appendString appends s as a JSON string; invalid UTF-8 becomes U+FFFD.
func appendString(b []byte, s string) []byte {
	b, _ = jsontext.AppendQuote(b, s) // the only error is invalid UTF-8, replaced
	return b
}
