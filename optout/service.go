package optout

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/heraldhq/herald/messaging"
)

// Config configures a Service. Store is required; every other field has
// a documented zero-value default.
type Config struct {
	// Store holds the opt-outs. Required.
	Store Store
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Service manages a company's opt-out list by hand (the API) and applies
// the requests people send.
type Service struct {
	store Store
	now   func() time.Time
}

// New returns a Service for cfg; Config.Store is required.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, errors.New("optout: Config.Store is required")
	}
	s := &Service{store: cfg.Store, now: cfg.Now}
	if s.now == nil {
		s.now = time.Now
	}
	return s, nil
}

// phone reads a number given to the API: an Invalid error on field when
// it is not one.
func phone(field, s string) (string, error) {
	n, ok := messaging.NormalizePhone(strings.TrimSpace(s))
	if !ok {
		return "", messaging.Invalidf(field, "%s %q is not a phone number: optional +, then 10 to 15 digits", field, s)
	}
	return n, nil
}

// scope reads a channel given to the API: empty is All.
func scope(s string) (Scope, error) {
	switch {
	case s == "":
		return All, nil
	case strings.EqualFold(s, string(All)):
		return All, nil
	case strings.EqualFold(s, string(Chat)):
		return Chat, nil
	}
	return "", messaging.Invalidf("channel", "channel must be All or Chat, not %q", s)
}

// Add opts a number out of channel (All, the default, or Chat) by hand,
// and reports whether it was not already.
func (s *Service) Add(ctx context.Context, companyID messaging.ID, number, channel string) (OptOut, bool, error) {
	var fe messaging.FieldErrors
	p, err := phone("phoneNumber", number)
	if err != nil {
		fe.Add("phoneNumber", "%s", err.(*messaging.Error).Fields["phoneNumber"])
	}
	sc, err := scope(channel)
	if err != nil {
		fe.Add("channel", "%s", err.(*messaging.Error).Fields["channel"])
	}
	if err := fe.Err(); err != nil {
		return OptOut{}, false, err
	}
	o := OptOut{CompanyID: companyID, Phone: p, Scope: sc, Source: FromAPI, CreatedAt: s.now().UTC().Truncate(time.Microsecond)}
	added, err := s.store.AddOptOut(ctx, o)
	if err != nil {
		return OptOut{}, false, fmt.Errorf("add an opt-out: %w", err)
	}
	return o, added, nil
}

// Remove opts a number back in to channel (All, the default, or Chat) by
// hand; a NotFound error when it was not opted out of it.
func (s *Service) Remove(ctx context.Context, companyID messaging.ID, number, channel string) error {
	p, err := phone("phoneNumber", number)
	if err != nil {
		return err
	}
	sc, err := scope(channel)
	if err != nil {
		return err
	}
	removed, err := s.store.RemoveOptOut(ctx, companyID, p, sc, FromAPI, s.now().UTC().Truncate(time.Microsecond))
	if err != nil {
		return fmt.Errorf("remove an opt-out: %w", err)
	}
	if !removed {
		return messaging.NotFoundf("%s is not opted out of %s", p, sc)
	}
	return nil
}

// List returns one page of the company's opt-outs, latest first, and how
// many match.
func (s *Service) List(ctx context.Context, companyID messaging.ID, f Filter) ([]OptOut, int, error) {
	p, err := f.PageRequest.Normalize()
	if err != nil {
		return nil, 0, err
	}
	f.PageRequest = p
	if f.Phone != "" {
		if f.Phone, err = phone("phoneNumber", f.Phone); err != nil {
			return nil, 0, err
		}
	}
	out, total, err := s.store.ListOptOuts(ctx, companyID, f)
	if err != nil {
		return nil, 0, fmt.Errorf("list opt-outs: %w", err)
	}
	return out, total, nil
}

// SetChat opts a company's number out of its chat messages (out) or back
// in, as the chat provider reports it (the person blocked or allowed the
// company's chat service), and reports whether that changed the list. A
// number the provider writes in another form than digits changes nothing.
func (s *Service) SetChat(ctx context.Context, companyID messaging.ID, number string, out bool, at time.Time) (bool, error) {
	p, ok := messaging.NormalizePhone(strings.TrimSpace(number))
	if !ok {
		return false, nil
	}
	at = at.UTC().Truncate(time.Microsecond)
	var changed bool
	var err error
	if out {
		changed, err = s.store.AddOptOut(ctx, OptOut{CompanyID: companyID, Phone: p, Scope: Chat, Source: FromChat, CreatedAt: at})
	} else {
		changed, err = s.store.RemoveOptOut(ctx, companyID, p, Chat, FromChat, at)
	}
	if err != nil {
		return false, fmt.Errorf("chat subscription: %w", err)
	}
	return changed, nil
}

// Limits of a company's keywords.
const (
	MaxKeywords   = 20 // in each list
	MaxKeywordLen = 20
)

// Keywords returns the company's keywords: its own, or DefaultKeywords
// when it set none.
func (s *Service) Keywords(ctx context.Context, companyID messaging.ID) (Keywords, error) {
	k, ok, err := s.store.Keywords(ctx, companyID)
	if err != nil {
		return Keywords{}, fmt.Errorf("read keywords: %w", err)
	}
	if !ok {
		return DefaultKeywords(), nil
	}
	return k, nil
}

// SetKeywords checks and stores the company's keywords: each a word of
// letters and digits (upper-cased when stored), at most MaxKeywordLen
// characters and MaxKeywords a list, none in both lists. An empty list
// turns that action off.
func (s *Service) SetKeywords(ctx context.Context, companyID messaging.ID, k Keywords) (Keywords, error) {
	var fe messaging.FieldErrors
	out := checkWords(&fe, "optOut", k.Out)
	in := checkWords(&fe, "optIn", k.In)
	for _, w := range in {
		if slices.Contains(out, w) {
			fe.Add("optIn", "%q is in both lists", w)
		}
	}
	if err := fe.Err(); err != nil {
		return Keywords{}, err
	}
	k = Keywords{Out: out, In: in}
	if err := s.store.SetKeywords(ctx, companyID, k); err != nil {
		return Keywords{}, fmt.Errorf("set keywords: %w", err)
	}
	return k, nil
}

// checkWords returns the words of field upper-cased without repetition,
// recording what is wrong in fe.
func checkWords(fe *messaging.FieldErrors, field string, words []string) []string {
	if len(words) > MaxKeywords {
		fe.Add(field, "%s may hold at most %d words", field, MaxKeywords)
		return nil
	}
	out := []string{}
	for _, w := range words {
		w = strings.ToUpper(strings.TrimSpace(w))
		if w == "" || len([]rune(w)) > MaxKeywordLen || !isWord(w) {
			fe.Add(field, "%q is not a word of 1 to %d letters and digits", w, MaxKeywordLen)
			continue
		}
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

func isWord(w string) bool {
	for _, r := range w {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			return false
		}
	}
	return true
}
