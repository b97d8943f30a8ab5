package infobip

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chatprovider"
)

// Name is the provider's name in the admin API.
const Name = "infobip"

// BaseURL is Infobip's generic API endpoint. Each account also has a
// personal one (https://<subdomain>.api.infobip.com, shown in Infobip's
// web interface), which a service should name as its baseUrl.
const BaseURL = "https://api.infobip.com"

// SendPath is the path of the send request under the base URL.
const SendPath = "/viber/2/messages"

// Credentials is the credentials object of an Infobip chat service.
type Credentials struct {
	// APIKey authenticates the send requests ("Authorization: App
	// <apiKey>"); it needs the viber-bm:message:send scope.
	APIKey string `json:"apiKey"`
	// CallbackUsername and CallbackPassword are the HTTP Basic
	// credentials set on the Infobip subscription that posts the
	// service's reports to Herald.
	CallbackUsername string `json:"callbackUsername"`
	CallbackPassword string `json:"callbackPassword"`
}

// Limits of Infobip's Viber content that Herald's own template rules do
// not already hold.
const (
	// maxValiditySeconds is the longest validity period Infobip keeps
	// (48 hours; longer ones are cut to it).
	maxValiditySeconds = 48 * 3600
	// minValiditySeconds is the shortest time to live Viber takes.
	minValiditySeconds = 30
)

// fileExtensions are the file types Infobip's file content takes
// (mediaUrl of FILE content), lower case without the dot.
func fileExtensions() []string {
	return []string{"doc", "docx", "rtf", "dot", "dotx", "odt", "odf", "fodt", "txt", "info", "pdf", "xps",
		"pdax", "eps", "xls", "xlsx", "ods", "fods", "csv", "xlsm", "xltx"}
}

func fileExtensionOK(ext string) bool {
	ext = strings.ToLower(strings.TrimPrefix(ext, "."))
	for _, e := range fileExtensions() {
		if e == ext {
			return true
		}
	}
	return false
}

// Provider describes Infobip's Viber Business Messages to the chat
// router: its name, its generic endpoint, the one channel it reaches
// here (Viber), what that channel carries and the credentials it needs.
func Provider() chatprovider.Provider {
	return chatprovider.Provider{
		Name:             Name,
		BaseURL:          BaseURL,
		Channels:         []string{chatprovider.ChannelViber},
		Carries:          Carries,
		CheckCredentials: CheckCredentials,
		New: func(ctx context.Context, s chatprovider.Settings) (chatprovider.Adapter, error) {
			a, err := New(ctx, s)
			if err != nil {
				return nil, err // not a nil *Adapter in a non-nil interface
			}
			return a, nil
		},
	}
}

// Carries returns nil when a message of type t with config c can go over
// channel through Infobip, else an Invalid *messaging.Error naming the
// field Infobip cannot take. Every Herald message type has an Infobip
// shape on Viber; the refusals are of details: a video needs a thumbnail
// and a duration, a file must be of a type Infobip sends.
func Carries(channel string, t messaging.MessageType, c messaging.ChatConfig) error {
	if channel != chatprovider.ChannelViber {
		return messaging.Invalidf("channel", "Infobip is used for Viber only, not %q", channel)
	}
	switch t {
	case messaging.TypeSimpleText, messaging.TypeImageOnly, messaging.TypeButtonPlusText,
		messaging.TypeImagePlusText, messaging.TypeCarousel, messaging.TypeSurvey:
		return nil
	case messaging.TypeVideo:
		if strings.TrimSpace(c.ThumbnailURL) == "" {
			return messaging.Invalidf("typeSpecificConfig.thumbnailUrl", "Infobip needs a thumbnailUrl for a Viber video")
		}
		if c.Duration <= 0 {
			return messaging.Invalidf("typeSpecificConfig.duration", "Infobip needs the duration of a Viber video, in seconds")
		}
		return nil
	case messaging.TypeFile:
		if !fileExtensionOK(c.FileType) {
			return messaging.Invalidf("typeSpecificConfig.fileType",
				"Infobip does not send %q files over Viber; it takes %s", c.FileType, strings.Join(fileExtensions(), ", "))
		}
		return nil
	}
	return messaging.Invalidf("messageType", "message type %d is not a chat message type", int(t))
}

// CheckCredentials returns nil when creds holds what an Infobip Viber
// service needs (apiKey, callbackUsername, callbackPassword), else an
// Invalid *messaging.Error naming the first missing field.
func CheckCredentials(channel string, creds json.RawMessage) error {
	if channel != chatprovider.ChannelViber {
		return messaging.Invalidf("channel", "Infobip is used for Viber only, not %q", channel)
	}
	_, err := parseCredentials(creds)
	return err
}

func parseCredentials(creds json.RawMessage) (Credentials, error) {
	var c Credentials
	if len(bytes.TrimSpace(creds)) == 0 {
		return c, messaging.Invalidf("credentials", "credentials are required: apiKey, callbackUsername, callbackPassword")
	}
	d := json.NewDecoder(bytes.NewReader(creds))
	d.DisallowUnknownFields()
	if err := d.Decode(&c); err != nil {
		return c, messaging.Invalidf("credentials", "credentials must be an object of apiKey, callbackUsername and callbackPassword: %v", err)
	}
	for _, f := range []struct{ name, v string }{
		{"apiKey", c.APIKey}, {"callbackUsername", c.CallbackUsername}, {"callbackPassword", c.CallbackPassword},
	} {
		if strings.TrimSpace(f.v) == "" {
			return c, messaging.Invalidf("credentials."+f.name, "credentials.%s is required", f.name)
		}
	}
	if strings.Contains(c.CallbackUsername, ":") {
		return c, messaging.Invalidf("credentials.callbackUsername", "credentials.callbackUsername must not hold a colon")
	}
	return c, nil
}

// fileName is the file name Infobip shows: the configured name, with
// the file type's extension added when the name does not end in it.
func fileName(c messaging.ChatConfig) string {
	name := c.FileName
	ext := strings.ToLower(c.FileType)
	if ext == "" || strings.EqualFold(strings.TrimPrefix(path.Ext(name), "."), ext) {
		return name
	}
	return fmt.Sprintf("%s.%s", name, ext)
}
