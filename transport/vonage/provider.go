package vonage

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chatprovider"
)

// Name is the provider's name in the admin API.
const Name = "vonage"

// BaseURL is the public endpoint of the Vonage Messages API.
const BaseURL = "https://api.nexmo.com"

// MessagesPath is the path of the send request under the base URL.
const MessagesPath = "/v1/messages"

// The provider's channel names, as the request's channel field spells
// them.
const (
	wireViber    = "viber_service"
	wireWhatsApp = "whatsapp"
)

// Limits of the provider's shapes that Herald's own limits do not cover.
const (
	// viberFileNameMax is the longest file name of a Viber file message.
	viberFileNameMax = 25
	// viberVideoMaxSeconds and viberVideoMaxMB bound a Viber video.
	viberVideoMaxSeconds = 600
	viberVideoMaxMB      = 200
	// waButtonTitleMax is the longest title of a WhatsApp reply button
	// or call-to-action button.
	waButtonTitleMax = 20
	// waReplyButtonsMax is the most reply buttons of one WhatsApp
	// message; a survey with more options goes as a list.
	waReplyButtonsMax = 3
	// waListRowTitleMax is the longest title of a WhatsApp list row.
	waListRowTitleMax = 24
	// waListRowsMax is the most rows of a WhatsApp list.
	waListRowsMax = 10
)

// Credentials is the credentials object of a Vonage chat service, as the
// admin API takes it. All three fields are required on both channels.
type Credentials struct {
	// ApplicationID is the id of the Vonage application that sends the
	// service's messages and receives its webhooks.
	ApplicationID string `json:"applicationId"`
	// PrivateKey is the application's RSA private key in PEM form
	// (PKCS #8 or PKCS #1): requests are authenticated with a JWT signed
	// with it.
	PrivateKey string `json:"privateKey"`
	// SignatureSecret is the account's signature secret: Vonage signs
	// its webhooks with it.
	SignatureSecret string `json:"signatureSecret"`
}

// credentials is Credentials checked and parsed.
type credentials struct {
	appID  string
	key    *rsa.PrivateKey
	secret []byte
}

// parseCredentials checks creds and parses its key. Its errors are
// *messaging.Error of code Invalid naming the field.
func parseCredentials(creds json.RawMessage) (credentials, error) {
	var c Credentials
	if len(creds) == 0 {
		return credentials{}, messaging.Invalidf("credentials", "credentials are required: applicationId, privateKey and signatureSecret")
	}
	if err := json.Unmarshal(creds, &c); err != nil {
		return credentials{}, messaging.Invalidf("credentials", "credentials must be a JSON object with applicationId, privateKey and signatureSecret")
	}
	if strings.TrimSpace(c.ApplicationID) == "" {
		return credentials{}, messaging.Invalidf("credentials.applicationId", "applicationId is required")
	}
	if strings.TrimSpace(c.PrivateKey) == "" {
		return credentials{}, messaging.Invalidf("credentials.privateKey", "privateKey is required")
	}
	key, err := ParsePrivateKey(c.PrivateKey)
	if err != nil {
		return credentials{}, messaging.Invalidf("credentials.privateKey", "privateKey must be an RSA private key in PEM form")
	}
	if c.SignatureSecret == "" {
		return credentials{}, messaging.Invalidf("credentials.signatureSecret", "signatureSecret is required")
	}
	return credentials{appID: c.ApplicationID, key: key, secret: []byte(c.SignatureSecret)}, nil
}

// ParsePrivateKey parses an RSA private key in PEM form, PKCS #8 or
// PKCS #1.
func ParsePrivateKey(s string) (*rsa.PrivateKey, error) {
	block, _ := pem.Decode([]byte(strings.TrimSpace(s)))
	if block == nil {
		return nil, errors.New("vonage: no PEM block in the private key")
	}
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		rk, ok := k.(*rsa.PrivateKey)
		if !ok {
			return nil, errors.New("vonage: the private key is not an RSA key")
		}
		return rk, nil
	}
	k, err := x509.ParsePKCS1PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("vonage: parse the private key: %w", err)
	}
	return k, nil
}

// Provider describes the Vonage Messages API (v1) to Herald: its name,
// its endpoint, its two channels (Viber and WhatsApp), what each carries,
// its credentials and the adapter it builds.
func Provider() chatprovider.Provider {
	return chatprovider.Provider{
		Name:     Name,
		BaseURL:  BaseURL,
		Channels: []string{chatprovider.ChannelViber, chatprovider.ChannelWhatsApp},
		Carries:  Carries,
		CheckCredentials: func(channel string, creds json.RawMessage) error {
			if err := checkChannel(channel); err != nil {
				return err
			}
			_, err := parseCredentials(creds)
			return err
		},
		New: func(ctx context.Context, s chatprovider.Settings) (chatprovider.Adapter, error) {
			a, err := New(ctx, s)
			if err != nil {
				return nil, err
			}
			return a, nil
		},
	}
}

// checkChannel refuses a channel the provider does not reach.
func checkChannel(channel string) error {
	switch channel {
	case chatprovider.ChannelViber, chatprovider.ChannelWhatsApp:
		return nil
	}
	return messaging.Invalidf("channel", "vonage reaches the channels viber and whatsapp, not %q", channel)
}

// wireChannel is the provider's name of a Herald channel.
func wireChannel(channel string) string {
	if channel == chatprovider.ChannelWhatsApp {
		return wireWhatsApp
	}
	return wireViber
}

// Carries reports whether a message of type t with config c can go over
// channel through Vonage: nil, or a *messaging.Error of code Invalid
// naming the field that cannot be carried. The capability table of the
// package documentation lists the shapes.
func Carries(channel string, t messaging.MessageType, c messaging.ChatConfig) error {
	if err := checkChannel(channel); err != nil {
		return err
	}
	if !t.Valid() {
		return messaging.Invalidf("messageType", "messageType must be 1 to 8")
	}
	if channel == chatprovider.ChannelWhatsApp {
		return carriesWhatsApp(t, c)
	}
	return carriesViber(t, c)
}

func carriesViber(t messaging.MessageType, c messaging.ChatConfig) error {
	switch t {
	case messaging.TypeCarousel:
		return messaging.Invalidf("messageType", "vonage has no carousel on viber")
	case messaging.TypeSurvey:
		return messaging.Invalidf("messageType", "vonage has no survey (options to pick) on viber")
	case messaging.TypeVideo:
		if c.ThumbnailURL == "" {
			return messaging.Invalidf("typeSpecificConfig.thumbnailUrl", "a viber video through vonage needs a thumbnailUrl")
		}
		if c.Duration < 1 || c.Duration > viberVideoMaxSeconds {
			return messaging.Invalidf("typeSpecificConfig.duration", "a viber video through vonage needs a duration of 1 to %d seconds", viberVideoMaxSeconds)
		}
		if mb := megabytes(c.FileSize); mb < 1 || mb > viberVideoMaxMB {
			return messaging.Invalidf("typeSpecificConfig.fileSize", "a viber video through vonage needs a fileSize of at most %d MB", viberVideoMaxMB)
		}
	case messaging.TypeFile:
		if utf8.RuneCountInString(c.FileName) > viberFileNameMax {
			return messaging.Invalidf("typeSpecificConfig.fileName", "a viber file name through vonage is at most %d characters", viberFileNameMax)
		}
	}
	return nil
}

func carriesWhatsApp(t messaging.MessageType, c messaging.ChatConfig) error {
	if pt := c.ProviderTemplate; pt != nil {
		if strings.TrimSpace(pt.Name) == "" {
			return messaging.Invalidf("typeSpecificConfig.providerTemplate.name", "providerTemplate.name is required")
		}
		if strings.TrimSpace(pt.Language) == "" {
			return messaging.Invalidf("typeSpecificConfig.providerTemplate.language", "providerTemplate.language is required")
		}
		return nil // the template approved at WhatsApp is the content
	}
	switch t {
	case messaging.TypeCarousel:
		return messaging.Invalidf("messageType", "vonage has no free-form carousel on whatsapp")
	case messaging.TypeButtonPlusText, messaging.TypeImagePlusText:
		if utf8.RuneCountInString(c.ButtonText) > waButtonTitleMax {
			return messaging.Invalidf("typeSpecificConfig.buttonText", "a whatsapp button text is at most %d characters", waButtonTitleMax)
		}
	case messaging.TypeVideo:
		if c.ButtonText != "" || c.ButtonURL != "" {
			return messaging.Invalidf("typeSpecificConfig.buttonText", "a whatsapp video carries no button")
		}
	case messaging.TypeSurvey:
		if len(c.Options) > waListRowsMax {
			return messaging.Invalidf("typeSpecificConfig.options", "a whatsapp list has at most %d options", waListRowsMax)
		}
		for i, o := range c.Options {
			if utf8.RuneCountInString(o.OptionText) > waListRowTitleMax {
				return messaging.Invalidf(fmt.Sprintf("typeSpecificConfig.options[%d].optionText", i),
					"a whatsapp option text is at most %d characters", waListRowTitleMax)
			}
		}
	}
	return nil
}

// megabytes is a size in bytes in whole megabytes, rounded up.
func megabytes(n int64) int64 {
	const mb = 1 << 20
	if n <= 0 {
		return 0
	}
	return (n + mb - 1) / mb
}
