package infobip

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/transport/chatprovider"
)

// requestTimeout bounds one send request when ctx has no earlier
// deadline.
const requestTimeout = 30 * time.Second

// maxAnswerBytes caps how much of an answer is read.
const maxAnswerBytes = 1 << 20

// Adapter is one Infobip Viber service's connection: it sends the
// service's messages and serves its reports (mount it at
// /callbacks/chat/{chatServiceId}).
type Adapter struct {
	s       chatprovider.Settings
	creds   Credentials
	sendURL string
	log     *slog.Logger
	replays chatprovider.ReplayGuard
	// failed holds the keys of reports Herald failed to store, until
	// their time: Infobip posts them again, and a guard that cannot
	// forget would take that post for a replay.
	failed *memoryGuard
}

// New builds the adapter of one service from s: s.Credentials must pass
// CheckCredentials, s.Reporter is required, s.Sender is the Viber sender
// Infobip activated for the service. A nil s.Client is
// http.DefaultClient, a nil s.Replays a guard in memory owned by the
// adapter.
func New(ctx context.Context, s chatprovider.Settings) (*Adapter, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("infobip: %w", err)
	}
	if s.Channel == "" {
		s.Channel = chatprovider.ChannelViber
	}
	if s.Channel != chatprovider.ChannelViber {
		return nil, fmt.Errorf("infobip: service %d: %w", s.ServiceID, messaging.Invalidf("channel", "Infobip is used for Viber only, not %q", s.Channel))
	}
	creds, err := parseCredentials(s.Credentials)
	if err != nil {
		return nil, fmt.Errorf("infobip: service %d: %w", s.ServiceID, err)
	}
	if s.Reporter == nil {
		return nil, fmt.Errorf("infobip: service %d: a Reporter is required", s.ServiceID)
	}
	if strings.TrimSpace(s.Sender) == "" {
		return nil, fmt.Errorf("infobip: service %d: %w", s.ServiceID, messaging.Invalidf("providerServiceId", "the Viber sender is required"))
	}
	base := strings.TrimRight(s.BaseURL, "/")
	if base == "" {
		base = BaseURL
	}
	if s.Client == nil {
		s.Client = http.DefaultClient
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	log := s.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a := &Adapter{s: s, creds: creds, sendURL: base + SendPath, log: log.With("provider", Name, "service", s.ServiceID)}
	a.replays = s.Replays
	if a.replays == nil {
		a.replays = newMemoryGuard(s.Now)
	}
	a.failed = newMemoryGuard(s.Now)
	return a, nil
}

// Close releases the adapter's memory of replays.
func (a *Adapter) Close() error {
	if g, ok := a.replays.(*memoryGuard); ok {
		g.reset()
	}
	a.failed.reset()
	return nil
}

// SendChat sends m through Infobip. Its errors are *delivery.SendError
// made with delivery.ChatFailure, or errors wrapping ctx.Err().
func (a *Adapter) SendChat(ctx context.Context, m delivery.ChatSend) (delivery.ChatAccepted, error) {
	body, err := a.body(m)
	if err != nil {
		return delivery.ChatAccepted{}, err
	}
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, a.sendURL, bytes.NewReader(body))
	if err != nil {
		return delivery.ChatAccepted{}, delivery.ChatFailure(delivery.ReasonServiceRefused, "bad base URL", fmt.Errorf("infobip: build request: %w", err))
	}
	req.Header.Set("Authorization", "App "+a.creds.APIKey)
	chatprovider.InjectTrace(ctx, req.Header)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := a.s.Client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return delivery.ChatAccepted{}, fmt.Errorf("infobip: send message %s: %w", m.MessageID, ctx.Err())
		}
		return delivery.ChatAccepted{}, delivery.ChatFailure(delivery.ReasonTransient, "network", fmt.Errorf("infobip: send message %s: %w", m.MessageID, err))
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		if ctx.Err() != nil {
			return delivery.ChatAccepted{}, fmt.Errorf("infobip: read answer of message %s: %w", m.MessageID, ctx.Err())
		}
		return delivery.ChatAccepted{}, delivery.ChatFailure(delivery.ReasonTransient, "network", fmt.Errorf("infobip: read answer of message %s: %w", m.MessageID, err))
	}
	if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusCreated {
		return a.accepted(m, answer)
	}
	return delivery.ChatAccepted{}, a.httpFailure(ctx, m, resp, answer)
}

// accepted reads a 200 answer: the status of the message's destination.
func (a *Adapter) accepted(m delivery.ChatSend, answer []byte) (delivery.ChatAccepted, error) {
	var sr sendResponse
	if err := json.Unmarshal(answer, &sr); err != nil || len(sr.Messages) == 0 {
		if err == nil {
			err = errors.New("no message in the answer")
		}
		return delivery.ChatAccepted{}, delivery.ChatFailure(delivery.ReasonTransient, "unreadable answer",
			fmt.Errorf("infobip: answer of message %s: %w", m.MessageID, err))
	}
	got := sr.Messages[0]
	id := got.MessageID
	if id == "" {
		id = m.MessageID.String()
	}
	switch {
	case got.Status.Accepted():
		return delivery.ChatAccepted{ProviderID: id}, nil
	case got.Status.ID == StatusDuplicateMessageID:
		return delivery.ChatAccepted{ProviderID: id, AlreadySent: true}, nil
	}
	reason := FailureReason(got.Status, nil)
	return delivery.ChatAccepted{}, delivery.ChatFailure(reason, detail(got.Status, nil),
		fmt.Errorf("infobip: message %s not accepted: %s (%d)", m.MessageID, got.Status.Name, got.Status.ID))
}

// httpFailure classifies an answer other than 200 to the send of ctx.
func (a *Adapter) httpFailure(ctx context.Context, m delivery.ChatSend, resp *http.Response, answer []byte) error {
	var ae apiError
	_ = json.Unmarshal(answer, &ae) // an unreadable body leaves the words empty
	code, text := ae.words()
	word := fmt.Sprintf("HTTP %d", resp.StatusCode)
	if code != "" {
		word += " " + code
	}
	cause := fmt.Errorf("infobip: message %s: %s: %s", m.MessageID, word, text)
	switch sc := resp.StatusCode; {
	case sc == http.StatusTooManyRequests:
		se := delivery.ChatFailure(delivery.ReasonTransient, word, fmt.Errorf("%w: %w", delivery.ErrRateLimited, cause))
		se.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), a.s.Now())
		return se
	case sc == http.StatusRequestTimeout || sc >= 500:
		return delivery.ChatFailure(delivery.ReasonTransient, word, cause)
	case sc == http.StatusUnauthorized || sc == http.StatusForbidden || sc == http.StatusNotFound:
		a.log.WarnContext(ctx, "infobip refused the service's requests", "status", sc, "code", code)
		return delivery.ChatFailure(delivery.ReasonServiceRefused, word, cause)
	}
	return delivery.ChatFailure(delivery.ReasonRejected, word, cause)
}

// retryAfter reads a Retry-After header: seconds or an HTTP date; zero
// when absent or unreadable.
func retryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if s, err := strconv.Atoi(h); err == nil {
		if s < 0 {
			return 0
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// body is the JSON request of m.
func (a *Adapter) body(m delivery.ChatSend) ([]byte, error) {
	if err := Carries(a.s.Channel, m.Type, m.Config); err != nil {
		return nil, delivery.ChatFailure(delivery.ReasonUnsupported, "not carried", fmt.Errorf("infobip: message %s: %w", m.MessageID, err))
	}
	sender := m.Sender
	if sender == "" {
		sender = a.s.Sender
	}
	msg := message{
		Sender:       sender,
		Destinations: []destination{{To: m.To, MessageID: m.MessageID.String()}},
		Content:      contentOf(m),
		Webhooks:     &webhooks{CallbackData: m.MessageID.String()},
	}
	if a.s.CallbackURL != "" {
		msg.Webhooks.Delivery = &urlOnly{URL: a.s.CallbackURL}
		msg.Webhooks.Seen = &urlOnly{URL: a.s.CallbackURL}
	}
	var opt options
	if m.TTL > 0 {
		secs := int(m.TTL / time.Second)
		secs = min(max(secs, minValiditySeconds), maxValiditySeconds)
		opt.ValidityPeriod = &validityPeriod{Amount: secs, TimeUnit: "SECONDS"}
	}
	if m.Type == messaging.TypeSurvey {
		opt.TrackingData = surveyTracking(m.MessageID, m.Config.Options)
	}
	if opt != (options{}) {
		msg.Options = &opt
	}
	b, err := json.Marshal(request{Messages: []message{msg}})
	if err != nil {
		return nil, delivery.ChatFailure(delivery.ReasonRejected, "encoding", fmt.Errorf("infobip: encode message %s: %w", m.MessageID, err))
	}
	return b, nil
}

// contentOf is the Infobip content object a message goes out as:
//
//	1 SimpleText      TEXT: text
//	2 ImageOnly       IMAGE: mediaUrl (+ text when set)
//	3 ButtonPlusText  TEXT: text, button {title, action}
//	4 ImagePlusText   IMAGE: text, mediaUrl, button when set
//	5 Carousel        CAROUSEL: text (the first card's title when empty),
//	                  cards [{text: title, mediaUrl, buttons}]
//	6 Survey          LIST: text (the question), options (the option texts)
//	7 Video           VIDEO: text when set, mediaUrl, mediaDuration
//	                  (ISO 8601, PT<n>S), thumbnailUrl, button when set
//	8 File            FILE: fileName (with the type's extension), mediaUrl;
//	                  Viber shows no text with a file
func contentOf(m delivery.ChatSend) content {
	c := m.Config
	var btn *button
	if c.ButtonText != "" && c.ButtonURL != "" {
		btn = &button{Title: c.ButtonText, Action: c.ButtonURL}
	}
	switch m.Type {
	case messaging.TypeImageOnly:
		return content{Type: "IMAGE", Text: m.Text, MediaURL: c.ImageURL}
	case messaging.TypeButtonPlusText:
		return content{Type: "TEXT", Text: m.Text, Button: btn}
	case messaging.TypeImagePlusText:
		return content{Type: "IMAGE", Text: m.Text, MediaURL: c.ImageURL, Button: btn}
	case messaging.TypeCarousel:
		out := content{Type: "CAROUSEL", Text: m.Text}
		for _, it := range c.Items {
			cd := card{Text: it.Title, MediaURL: it.ImageURL, Buttons: []button{{Title: it.ButtonText, Action: it.ButtonURL}}}
			if it.SecondaryButtonText != "" && it.SecondaryButtonURL != "" {
				cd.Buttons = append(cd.Buttons, button{Title: it.SecondaryButtonText, Action: it.SecondaryButtonURL})
			}
			out.Cards = append(out.Cards, cd)
		}
		if out.Text == "" && len(c.Items) > 0 {
			out.Text = c.Items[0].Title
		}
		return out
	case messaging.TypeSurvey:
		out := content{Type: "LIST", Text: m.Text}
		for _, o := range c.Options {
			out.Options = append(out.Options, o.OptionText)
		}
		return out
	case messaging.TypeVideo:
		return content{Type: "VIDEO", Text: m.Text, MediaURL: c.VideoURL, MediaDuration: fmt.Sprintf("PT%dS", c.Duration),
			ThumbnailURL: c.ThumbnailURL, Button: btn}
	case messaging.TypeFile:
		return content{Type: "FILE", FileName: fileName(c), MediaURL: c.FileURL}
	}
	return content{Type: "TEXT", Text: m.Text}
}
