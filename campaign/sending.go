package campaign

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/template"
)

// Field limits of the sending endpoints.
const (
	MaxCampaignNameLen        = 200
	MaxCampaignDescriptionLen = 1000
	MaxDirectSMSLen           = 1600
	MaxDirectChatLen          = 1000
	MaxFallbackTextLen        = 1600
	MaxExternalUserIDLen      = 100
)

// insertChunk is how many messages a preparation writes per store call.
const insertChunk = 10_000

// Recipient is one addressee of a send.
type Recipient struct {
	Phone          string
	ExternalUserID string
	Placeholders   Placeholders
	// ValidityPeriod, on AddMessage only, is the message's validity in
	// seconds (messaging.MinValidity to MaxValidity), counted from now; 0:
	// the template's default, if any.
	ValidityPeriod int
	// optedOut: the number asked the company to stop; its message is
	// written Failed (DetailsOptedOut) and never sent.
	optedOut bool
}

// DetailsOptedOut are the details of a message not sent because its number
// opted out.
const DetailsOptedOut = "OPTED_OUT"

// DetailsCancelled are the details of a message not sent because its
// campaign was cancelled.
const DetailsCancelled = "CANCELLED"

// SendResult is the answer to a bulk or direct send.
type SendResult struct {
	Campaign messaging.Campaign
	// MessageCount is the number of recipients accepted: one message
	// each.
	MessageCount int
	// SkippedCount is the number of recipients skipped:
	// len(InvalidPhoneNumbers) + len(ContentTooLong) +
	// len(OptedOutPhoneNumbers) + len(MissingPlaceholderPhoneNumbers).
	SkippedCount int
	// OptedOutPhoneNumbers are the numbers (digits only) a bulk send
	// skipped because they opted out of the company's messages of its
	// channel. Never nil on a bulk send; nil on a direct one, which sends
	// them nothing but records their message Failed with DetailsOptedOut.
	OptedOutPhoneNumbers []string
	// InvalidPhoneNumbers are the phone numbers that are not valid, as
	// they were sent, in request order.
	InvalidPhoneNumbers []string
	// ContentTooLong are the phone numbers, as they were sent and in
	// request order, of the bulk recipients skipped because their message
	// would exceed a limit of the template once rendered with their
	// placeholder values (1,600 characters of SMS text, for instance).
	// Never nil on a bulk send; nil on a direct one (direct sends have no
	// placeholders: their texts are checked as a whole).
	ContentTooLong []string
	// MissingPlaceholders are the template's placeholders that some
	// recipients have no value for, neither their own nor a request-level
	// one, with how many recipients lack each: counted among the
	// recipients left after the other skips (invalid numbers, messages too
	// long, opt-outs), before those skipped for a missing value. Never nil
	// on a bulk send; nil on a direct one (no template).
	MissingPlaceholders []MissingPlaceholder
	// MissingPlaceholderPhoneNumbers are the phone numbers, as they were
	// sent and in request order, of the bulk recipients skipped because
	// they lack a value and the send asked SkipMissing. Never nil on a
	// bulk send; nil on a direct one.
	MissingPlaceholderPhoneNumbers []string
	QueuedAt                       time.Time
}

// NewCampaign is a transactional campaign to create.
type NewCampaign struct {
	Name        string
	Description string
	TemplateID  messaging.ID
}

// CreateTransactional creates an InProgress transactional campaign of
// channel ch from one of the company's templates of that channel.
func (s *Service) CreateTransactional(ctx context.Context, companyID messaging.ID, ch messaging.Channel, nc NewCampaign) (messaging.Campaign, error) {
	var fe messaging.FieldErrors
	template.CheckField(&fe, "name", nc.Name, 1, MaxCampaignNameLen)
	template.CheckField(&fe, "description", nc.Description, 0, MaxCampaignDescriptionLen)
	if nc.TemplateID.IsZero() {
		fe.Add("templateId", "templateId is required")
	}
	if err := fe.Err(); err != nil {
		return messaging.Campaign{}, err
	}
	t, err := s.channelTemplate(ctx, companyID, ch, nc.TemplateID)
	if err != nil {
		return messaging.Campaign{}, err
	}
	status, err := Next("", EventCreateTransactional)
	if err != nil {
		return messaging.Campaign{}, err
	}
	c, err := s.campaignFor(ctx, t, status, messaging.ModeTransactional)
	if err != nil {
		return messaging.Campaign{}, err
	}
	c.Name, c.Description = nc.Name, nc.Description
	c.StartedAt = &c.CreatedAt
	if err := s.store.CreateCampaign(ctx, &c, s.limits.MaxPending); err != nil {
		return messaging.Campaign{}, s.retryHint(ctx, c.CompanyID, fmt.Errorf("create campaign: %w", err))
	}
	return c, nil
}

// AddMessage queues one message on a transactional campaign of channel ch,
// rendered from the campaign's template as it is now; a placeholder r has
// no value for stays as written (see AddMessageTo).
func (s *Service) AddMessage(ctx context.Context, companyID messaging.ID, ch messaging.Channel, campaignID messaging.ID, r Recipient) (messaging.Message, error) {
	a, err := s.AddMessageTo(ctx, companyID, ch, campaignID, r, KeepMissing)
	return a.Message, err
}

// Added is the answer to an add-message.
type Added struct {
	// Message is the message queued.
	Message messaging.Message
	// MissingPlaceholders are the template's placeholders the recipient
	// has no value for (Recipients 1 each), left as written in the
	// message; never nil.
	MissingPlaceholders []MissingPlaceholder
}

// AddMessageTo is AddMessage with a policy for the placeholders r has no
// value for: KeepMissing queues the message with them as written and
// reports them; SkipMissing makes the request Invalid on
// "placeholders.<name>" and queues nothing.
func (s *Service) AddMessageTo(ctx context.Context, companyID messaging.ID, ch messaging.Channel, campaignID messaging.ID, r Recipient, policy MissingPolicy) (Added, error) {
	tg, err := s.target(ctx, companyID, campaignID)
	if err != nil {
		return Added{}, err
	}
	c := tg.campaign
	if err := CanAddMessages(c, ch); err != nil {
		return Added{}, err
	}
	phone, ok := messaging.NormalizePhone(r.Phone)
	var fe messaging.FieldErrors
	if !ok {
		fe.Add("phoneNumber", "phoneNumber must be 10 to 15 digits, optionally after a '+'")
	}
	template.CheckField(&fe, "externalUserId", r.ExternalUserID, 0, MaxExternalUserIDLen)
	checkPlaceholders(&fe, "placeholders", r.Placeholders.All())
	checkValidity(&fe, r.ValidityPeriod)
	if err := fe.Err(); err != nil {
		return Added{}, err
	}
	if tg.compiled == nil {
		return Added{}, messaging.Errorf(messaging.Invalid, messaging.NameBadRequest, "The campaign's template %s no longer exists", c.TemplateID)
	}
	missing, err := lackedBy(tg.compiled, r, policy)
	if err != nil {
		return Added{}, err
	}
	now := s.clock()
	rendered, err := tg.compiled.Render(r.Placeholders.Map(nil), nil)
	if err != nil {
		return Added{}, tooLong(err, "")
	}
	m := &messaging.Message{
		ID: s.ids.New(), CompanyID: companyID, CampaignID: c.ID, Channel: c.Channel,
		Phone: phone, ExternalUserID: r.ExternalUserID, Content: rendered.Content,
		Config: rendered.Config, FallbackContent: rendered.FallbackContent,
		Status: messaging.StatusPending, DueAt: now, CreatedAt: now, UpdatedAt: now,
	}
	if v := cmp.Or(r.ValidityPeriod, tg.validity); v > 0 {
		exp := now.Add(time.Duration(v) * time.Second)
		m.ExpiresAt = &exp
	}
	out, err := s.optedOut(ctx, companyID, c.Channel, []Recipient{{Phone: phone}})
	if err != nil {
		return Added{}, err
	}
	if out[phone] {
		m.Status, m.Details = messaging.StatusFailed, DetailsOptedOut
	}
	if err := s.admit(ctx, companyID, m); err != nil {
		return Added{}, s.retryHint(ctx, companyID, fmt.Errorf("add message: %w", err))
	}
	s.notifyQueued()
	return Added{Message: *m, MissingPlaceholders: missing}, nil
}

// targetKey names a campaign of a company.
type targetKey struct{ company, campaign messaging.ID }

// target is what AddMessage needs of a campaign: the campaign and its
// template compiled, nil when the template no longer exists.
type target struct {
	campaign messaging.Campaign
	compiled *template.Compiled
	validity int // the template's default validity, seconds
}

// target reads a campaign and its template, through the cache for
// transactional campaigns in progress (the only ones messages are added
// to, and whose status does not change).
func (s *Service) target(ctx context.Context, companyID, campaignID messaging.ID) (target, error) {
	k := targetKey{companyID, campaignID}
	if tg, ok := s.targets.Get(k, time.Now()); ok {
		return tg, nil
	}
	c, err := s.store.GetCampaign(ctx, companyID, campaignID)
	if err != nil {
		return target{}, fmt.Errorf("add message: %w", err)
	}
	tg := target{campaign: c}
	if c.Mode != messaging.ModeTransactional || c.Status != messaging.CampaignInProgress {
		return tg, nil // refused by CanAddMessages; nothing worth keeping
	}
	t, err := s.store.GetTemplate(ctx, companyID, c.TemplateID)
	switch {
	case messaging.IsCode(err, messaging.NotFound):
	case err != nil:
		return target{}, fmt.Errorf("add message: %w", err)
	default:
		tg.compiled = template.CompileTemplate(&t)
		tg.validity = t.ValidityPeriod
	}
	s.targets.Put(k, tg, time.Now())
	return tg, nil
}

// BulkSend is a bulk send (Service.SendBulk).
type BulkSend struct {
	// Channel is the channel of the template and of the campaign.
	Channel messaging.Channel
	// TemplateID is one of the company's templates of Channel.
	TemplateID messaging.ID
	// Recipients are the addressees, at most Limits.MaxRecipients.
	Recipients []Recipient
	// Placeholders fill what a recipient's own placeholders do not.
	Placeholders map[string]string
	// ValidityPeriod is how long, in seconds from the campaign's start,
	// its messages stay worth sending (messaging.MinValidity to
	// MaxValidity); 0: the template's default, if any.
	ValidityPeriod int
	// Window, when set, keeps each message to a part of the day in its
	// recipient's local time (messaging.ParseSendWindow checks it).
	Window *messaging.SendWindow
	// Missing says what to do with the recipients lacking a value for a
	// placeholder of the template: KeepMissing (the zero value) or
	// SkipMissing. Either way SendResult.MissingPlaceholders counts them.
	Missing MissingPolicy
}

// SendBulk accepts a bulk send from one of the company's templates: it
// checks the request, admits its valid recipients against the pending
// capacity, creates the campaign Queuing and returns at once; the messages
// are rendered and written in the background, after which the campaign is
// Ready (or Failed).
func (s *Service) SendBulk(ctx context.Context, companyID messaging.ID, b BulkSend) (SendResult, error) {
	ch, templateID, recipients, placeholders := b.Channel, b.TemplateID, b.Recipients, b.Placeholders
	if templateID.IsZero() {
		return SendResult{}, messaging.Invalidf("templateId", "templateId is required")
	}
	var fe messaging.FieldErrors
	checkPlaceholders(&fe, "placeholders", maps.All(placeholders))
	checkValidity(&fe, b.ValidityPeriod)
	if err := fe.Err(); err != nil {
		return SendResult{}, err
	}
	valid, index, res, err := s.screen(recipients, 0, true)
	if err != nil {
		return SendResult{}, err
	}
	t, err := s.channelTemplate(ctx, companyID, ch, templateID)
	if err != nil {
		return SendResult{}, err
	}
	compiled := template.CompileTemplate(&t)
	bound := compiled.Bind(placeholders)
	if valid, index, err = fit(bound, recipients, valid, index, &res); err != nil {
		return SendResult{}, err
	}
	if valid, index, err = s.skipOptedOut(ctx, companyID, ch, valid, index, &res); err != nil {
		return SendResult{}, err
	}
	if valid, _, err = lacking(unfilled(compiled, placeholders), recipients, valid, index, b.Missing, &res); err != nil {
		return SendResult{}, err
	}
	status, err := Next("", EventCreateBulk)
	if err != nil {
		return SendResult{}, err
	}
	c, err := s.campaignFor(ctx, t, status, messaging.ModeBulk)
	if err != nil {
		return SendResult{}, err
	}
	c.Name = fmt.Sprintf("%s %s", t.Name, c.CreatedAt.Format("2006-01-02 15:04:05"))
	c.Planned = len(valid)
	if b.ValidityPeriod > 0 {
		c.ValidFor = time.Duration(b.ValidityPeriod) * time.Second
	}
	if b.Window != nil {
		w := *b.Window
		c.SendWindow = &w
	}
	if err := s.store.CreateCampaign(ctx, &c, s.limits.MaxPending); err != nil {
		return SendResult{}, s.retryHint(ctx, c.CompanyID, fmt.Errorf("create campaign: %w", err))
	}
	end := s.beginPrepare(ctx, c, len(valid))
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		// The preparation outlives the request and stops with the
		// Service; it keeps the request's values, so that what it logs
		// carries the request's trace.
		pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		defer cancel()
		defer context.AfterFunc(s.bgCtx, cancel)()
		values := map[string]string{} // one recipient's at a time: the renderer is one goroutine
		end(s.prepare(pctx, c, valid, func(r Recipient) (template.Rendered, error) { return bound.Render(r.Placeholders.Map(values)) }, EventPrepared))
	}()
	res.Campaign, res.QueuedAt = c, c.CreatedAt
	return res, nil
}

// DirectSMS is a direct SMS send: raw text, no template.
type DirectSMS struct {
	Content     string
	SMSSenderID int64
	Recipients  []Recipient
	// ValidityPeriod: see BulkSend (there is no template default).
	ValidityPeriod int
}

// SendDirectSMS sends raw text to many numbers through an approved sender:
// the messages are written before it returns, Pending, in a hidden
// campaign that is started at once.
func (s *Service) SendDirectSMS(ctx context.Context, companyID messaging.ID, d DirectSMS) (SendResult, error) {
	var fe messaging.FieldErrors
	template.CheckField(&fe, "messageContent", d.Content, 1, MaxDirectSMSLen)
	if d.SMSSenderID <= 0 {
		fe.Add("smsSenderId", "smsSenderId is required")
	}
	checkValidity(&fe, d.ValidityPeriod)
	if err := fe.Err(); err != nil {
		return SendResult{}, err
	}
	valid, _, res, err := s.screen(d.Recipients, MaxExternalUserIDLen, false)
	if err != nil {
		return SendResult{}, err
	}
	sd, err := s.approvedSender(ctx, companyID, d.SMSSenderID, messaging.NameInvalidSMSSender)
	if err != nil {
		return SendResult{}, err
	}
	c := s.directCampaign(companyID, messaging.ChannelSMS, len(valid))
	c.SMSSenderID = sd.ID
	c.ValidFor = time.Duration(d.ValidityPeriod) * time.Second
	c.Name = "Direct SMS " + c.CreatedAt.Format("2006-01-02 15:04:05")
	rendered := template.Rendered{Content: d.Content}
	return s.sendDirect(ctx, c, valid, rendered, res)
}

// DirectChat is a direct chat text send with an optional SMS fallback.
type DirectChat struct {
	Content             string
	ChatServiceID       int64
	SMSFallbackText     string
	SMSFallbackSenderID int64
	Recipients          []Recipient
	// ValidityPeriod: see BulkSend (there is no template default).
	ValidityPeriod int
}

// SendDirectChat sends raw chat text to many numbers through one of the
// company's chat services, with an optional GSM-7 SMS fallback; see
// SendDirectSMS.
func (s *Service) SendDirectChat(ctx context.Context, companyID messaging.ID, d DirectChat) (SendResult, error) {
	var fe messaging.FieldErrors
	template.CheckField(&fe, "messageContent", d.Content, 1, MaxDirectChatLen)
	checkValidity(&fe, d.ValidityPeriod)
	if d.ChatServiceID <= 0 {
		fe.Add("chatServiceId", "chatServiceId is required")
	}
	template.CheckField(&fe, "smsFallbackText", d.SMSFallbackText, 0, MaxFallbackTextLen)
	if err := fe.Err(); err != nil {
		return SendResult{}, err
	}
	if d.SMSFallbackText != "" {
		if !template.IsGSM7(d.SMSFallbackText) {
			return SendResult{}, messaging.Errorf(messaging.Invalid, messaging.NameFallbackUnsupportedChars,
				"smsFallbackText may hold GSM-7 characters only")
		}
		if d.SMSFallbackSenderID <= 0 {
			return SendResult{}, messaging.Errorf(messaging.Invalid, messaging.NameFallbackSenderRequired,
				"smsFallbackSenderId is required with smsFallbackText")
		}
	}
	valid, _, res, err := s.screen(d.Recipients, MaxExternalUserIDLen, false)
	if err != nil {
		return SendResult{}, err
	}
	cs, err := s.chatService(ctx, companyID, d.ChatServiceID, messaging.NameInvalidChatService)
	if err != nil {
		return SendResult{}, err
	}
	if err := s.checkDirectCarried(cs); err != nil {
		return SendResult{}, err
	}
	c := s.directCampaign(companyID, messaging.ChannelChat, len(valid))
	c.ChatServiceID = cs.ID
	c.ValidFor = time.Duration(d.ValidityPeriod) * time.Second
	c.Name = "Direct chat " + c.CreatedAt.Format("2006-01-02 15:04:05")
	if d.SMSFallbackText != "" {
		sd, err := s.approvedSender(ctx, companyID, d.SMSFallbackSenderID, messaging.NameInvalidFallbackSender)
		if err != nil {
			return SendResult{}, err
		}
		c.FallbackSender = sd.ID
	}
	rendered := template.Rendered{Content: d.Content, FallbackContent: d.SMSFallbackText}
	return s.sendDirect(ctx, c, valid, rendered, res)
}

func (s *Service) directCampaign(companyID messaging.ID, ch messaging.Channel, n int) messaging.Campaign {
	now := s.clock()
	return messaging.Campaign{
		ID: s.ids.New(), CompanyID: companyID, Channel: ch, Mode: messaging.ModeBulk,
		Status: messaging.CampaignQueuing, Hidden: true, MessageType: messaging.TypeSimpleText,
		Planned: n, CreatedAt: now, UpdatedAt: now,
	}
}

// skipOptedOut drops the recipients of a bulk send whose number opted out
// of the company's messages of channel ch, listing them in res. When none
// is left the send is Invalid. valid[j] is recipients[index[j]]: both are
// compacted alike.
func (s *Service) skipOptedOut(ctx context.Context, companyID messaging.ID, ch messaging.Channel, valid []Recipient, index []int32, res *SendResult) ([]Recipient, []int32, error) {
	res.OptedOutPhoneNumbers = []string{}
	out, err := s.optedOut(ctx, companyID, ch, valid)
	if err != nil || len(out) == 0 {
		return valid, index, err
	}
	kept := valid[:0]
	keptIndex := index[:0]
	for j, r := range valid {
		if out[r.Phone] {
			res.OptedOutPhoneNumbers = append(res.OptedOutPhoneNumbers, r.Phone)
			continue
		}
		kept = append(kept, r)
		keptIndex = append(keptIndex, index[j])
	}
	clear(valid[len(kept):])
	res.SkippedCount += len(res.OptedOutPhoneNumbers)
	res.MessageCount = len(kept)
	if len(kept) == 0 {
		return nil, nil, messaging.Errorf(messaging.Invalid, messaging.NameNoValidPhoneNumbers,
			"Every recipient has opted out of the company's %s messages", ch)
	}
	return kept, keptIndex, nil
}

// optedOut reads which of the recipients' numbers opted out of channel ch.
func (s *Service) optedOut(ctx context.Context, companyID messaging.ID, ch messaging.Channel, rs []Recipient) (map[string]bool, error) {
	if s.opts == nil {
		return nil, nil
	}
	phones := make([]string, len(rs))
	for i, r := range rs {
		phones[i] = r.Phone
	}
	out, err := s.opts.OptedOut(ctx, companyID, phones, ch)
	if err != nil {
		return nil, fmt.Errorf("read opt-outs: %w", err)
	}
	return out, nil
}

// sendDirect creates the hidden campaign, writes its messages (those of
// numbers that opted out Failed, DetailsOptedOut) and starts it before
// returning.
func (s *Service) sendDirect(ctx context.Context, c messaging.Campaign, valid []Recipient, r template.Rendered, res SendResult) (SendResult, error) {
	out, err := s.optedOut(ctx, c.CompanyID, c.Channel, valid)
	if err != nil {
		return SendResult{}, err
	}
	for i := range valid {
		valid[i].optedOut = out[valid[i].Phone]
	}
	if err := s.store.CreateCampaign(ctx, &c, s.limits.MaxPending); err != nil {
		return SendResult{}, s.retryHint(ctx, c.CompanyID, fmt.Errorf("create campaign: %w", err))
	}
	end := s.beginPrepare(ctx, c, len(valid))
	err = s.prepare(ctx, c, valid, func(Recipient) (template.Rendered, error) { return r, nil }, EventAutoStart)
	end(err)
	if err != nil {
		return SendResult{}, fmt.Errorf("direct send: %w", err)
	}
	c, err = s.store.GetCampaign(ctx, c.CompanyID, c.ID)
	if err != nil {
		return SendResult{}, fmt.Errorf("direct send: %w", err)
	}
	res.Campaign, res.QueuedAt = c, c.CreatedAt
	return res, nil
}

// prepare renders and writes the messages of a Queuing campaign in chunks,
// then moves it on ev (Ready, or InProgress for direct sends). On a failure
// the campaign ends Failed, its written messages are removed and its
// reservation released.
func (s *Service) prepare(ctx context.Context, c messaging.Campaign, recipients []Recipient, render func(Recipient) (template.Rendered, error), ev Event) error {
	s.markPreparing(c.ID, true)
	defer s.markPreparing(c.ID, false)
	err := s.insertAll(ctx, c, recipients, render)
	if err == nil {
		to, nerr := Next(c.Status, ev)
		if nerr != nil {
			return nerr
		}
		err = s.store.TransitionCampaign(ctx, messaging.CampaignTransition{CompanyID: c.CompanyID, CampaignID: c.ID, From: Sources(ev), To: to, At: s.clock()})
		if err == nil {
			if to == messaging.CampaignInProgress {
				s.notifyQueued()
			}
			return nil
		}
	}
	s.log.ErrorContext(ctx, "campaign preparation failed", "campaign", c.ID, "company", c.CompanyID, "err", err)
	to, _ := Next(c.Status, EventPreparationFailed)
	// The request context may be gone; the failure must still be recorded.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if ferr := s.store.TransitionCampaign(fctx, messaging.CampaignTransition{CompanyID: c.CompanyID, CampaignID: c.ID, From: Sources(EventPreparationFailed), To: to, At: s.clock(), Reason: "Preparation failed: the messages could not be written"}); ferr != nil {
		s.log.ErrorContext(ctx, "recording the preparation failure", "campaign", c.ID, "err", ferr)
	}
	return fmt.Errorf("prepare campaign %s: %w", c.ID, err)
}

func (s *Service) insertAll(ctx context.Context, c messaging.Campaign, recipients []Recipient, render func(Recipient) (template.Rendered, error)) error {
	// Rendering a chunk overlaps with writing the one before it: a
	// renderer fills one of two buffers while the store writes the other.
	type chunk struct {
		batch      []messaging.Message
		msgs       []*messaging.Message
		start, end int
	}
	size := min(insertChunk, len(recipients))
	free := make(chan chunk, 2)
	for range 2 {
		free <- chunk{batch: make([]messaging.Message, 0, size), msgs: make([]*messaging.Message, 0, size)}
	}
	full := make(chan chunk, 1)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil) // stops the renderer when a write fails
	go func() {
		defer close(full)
		for start := 0; start < len(recipients); start += insertChunk {
			var ch chunk
			select {
			case ch = <-free:
			case <-ctx.Done():
				return
			}
			end := min(start+insertChunk, len(recipients))
			now := s.clock()
			ch.batch, ch.msgs, ch.start, ch.end = ch.batch[:0], ch.msgs[:0], start, end
			for i, r := range recipients[start:end] {
				rd, err := render(r)
				if err != nil { // the recipients were checked: not expected
					cancel(fmt.Errorf("render message %d: %w", start+i, err))
					return
				}
				m := messaging.Message{
					ID: s.ids.New(), CompanyID: c.CompanyID, CampaignID: c.ID, Channel: c.Channel,
					Phone: r.Phone, ExternalUserID: r.ExternalUserID, Content: rd.Content, Config: rd.Config,
					FallbackContent: rd.FallbackContent, Status: messaging.StatusPending,
					DueAt: now, CreatedAt: now, UpdatedAt: now,
				}
				if r.optedOut {
					m.Status, m.Details = messaging.StatusFailed, DetailsOptedOut
				}
				ch.batch = append(ch.batch, m)
			}
			for i := range ch.batch {
				ch.msgs = append(ch.msgs, &ch.batch[i])
			}
			select {
			case full <- ch:
			case <-ctx.Done():
				return
			}
		}
	}()
	written := 0
	for ch := range full {
		if err := s.store.InsertMessages(ctx, ch.msgs); err != nil {
			return fmt.Errorf("insert messages %d-%d: %w", ch.start, ch.end, err)
		}
		written = ch.end
		free <- ch
	}
	if written < len(recipients) { // the renderer stopped: ctx ended, or a rendering failed
		return fmt.Errorf("insert messages from %d: %w", written, context.Cause(ctx))
	}
	return nil
}

// screen applies the recipient rules: at most MaxRecipients; externalUserId,
// placeholder names and values refused by template.CheckChars, and
// externalUserId over maxExternal characters when maxExternal > 0, make
// the request Invalid, on the field of the first recipient at fault;
// numbers normalised (invalid ones skipped and reported as sent); at least
// one valid. withIndex asks for the index in recipients of each valid
// recipient.
func (s *Service) screen(recipients []Recipient, maxExternal int, withIndex bool) ([]Recipient, []int32, SendResult, error) {
	if err := s.limits.CheckRecipients(len(recipients)); err != nil {
		return nil, nil, SendResult{}, err
	}
	var res SendResult
	res.InvalidPhoneNumbers = []string{}
	var (
		valid []Recipient // sized at the first valid number
		index []int32
	)
	for i, r := range recipients {
		if err := checkRecipient(i, r, maxExternal); err != nil {
			return nil, nil, SendResult{}, err
		}
		phone, ok := messaging.NormalizePhone(r.Phone)
		if !ok {
			res.InvalidPhoneNumbers = append(res.InvalidPhoneNumbers, r.Phone)
			continue
		}
		r.Phone = phone
		if valid == nil {
			valid = make([]Recipient, 0, len(recipients)-i)
			if withIndex {
				index = make([]int32, 0, len(recipients)-i)
			}
		}
		valid = append(valid, r)
		if withIndex {
			index = append(index, int32(i))
		}
	}
	res.SkippedCount = len(res.InvalidPhoneNumbers)
	res.MessageCount = len(valid)
	if len(valid) == 0 {
		return nil, nil, SendResult{}, messaging.Errorf(messaging.Invalid, messaging.NameNoValidPhoneNumbers,
			"None of the %d recipients has a valid phone number", len(recipients))
	}
	return valid, index, res, nil
}

// checkRecipient checks the texts of recipients[i].
func checkRecipient(i int, r Recipient, maxExternal int) error {
	ok := template.CheckChars(r.ExternalUserID) == nil
	for _, v := range r.Placeholders {
		ok = ok && template.CheckChars(v.Name) == nil && template.CheckChars(v.Value) == nil
	}
	if ok && (maxExternal <= 0 || len(r.ExternalUserID) <= maxExternal || utf8.RuneCountInString(r.ExternalUserID) <= maxExternal) {
		return nil
	}
	var fe messaging.FieldErrors
	p := "recipients[" + strconv.Itoa(i) + "]"
	if maxExternal > 0 {
		template.CheckField(&fe, p+".externalUserId", r.ExternalUserID, 0, maxExternal)
	} else {
		template.CheckFieldChars(&fe, p+".externalUserId", r.ExternalUserID)
	}
	checkPlaceholders(&fe, p+".placeholders", r.Placeholders.All())
	return fe.Err()
}

// fit keeps the valid recipients of a bulk send whose message fits the
// limits of the template once rendered; the others are skipped and listed
// in res.ContentTooLong by their numbers as sent. valid[j] is
// recipients[index[j]]. When none fits, the send is Invalid, on the
// placeholder that takes the most room in the first recipient's message.
// It renders nothing: the lengths are computed (see template.Bound). The
// recipients kept are returned with their indexes in recipients.
func fit(b *template.Bound, recipients, valid []Recipient, index []int32, res *SendResult) ([]Recipient, []int32, error) {
	res.ContentTooLong = []string{}
	kept := valid[:0]
	keptIndex := index[:0]
	first := -1
	values := map[string]string{}
	for j, r := range valid {
		if b.Fits(r.Placeholders.Map(values)) {
			kept = append(kept, r)
			keptIndex = append(keptIndex, index[j])
			continue
		}
		if first < 0 {
			first = j
		}
		res.ContentTooLong = append(res.ContentTooLong, recipients[index[j]].Phone)
	}
	if len(kept) == 0 { // nothing was moved: valid[first] is as it was
		return nil, nil, tooLong(b.Check(valid[first].Placeholders.Map(values)), "recipients["+strconv.Itoa(int(index[first]))+"].")
	}
	clear(valid[len(kept):]) // let go of the skipped recipients' values
	res.SkippedCount += len(res.ContentTooLong)
	res.MessageCount = len(kept)
	return kept, keptIndex, nil
}

// tooLong turns a *template.TooLongError into the Invalid error of a send,
// on the placeholder at fault: "placeholders.<name>" when the value is a
// request-level one, else prefix+"placeholders.<name>" (prefix names the
// recipient, "" for add-message).
func tooLong(err error, prefix string) error {
	var e *template.TooLongError
	if !errors.As(err, &e) {
		return err
	}
	field := prefix + "placeholders"
	switch {
	case e.Placeholder == "":
	case e.FromRequest:
		field = "placeholders." + e.Placeholder
	default:
		field += "." + e.Placeholder
	}
	return messaging.Invalidf(field, "%s", e.Error())
}

// checkPlaceholders adds a field error for each placeholder name or value
// that template.CheckChars refuses; prefix is the path of the object.
func checkPlaceholders(fe *messaging.FieldErrors, prefix string, values iter.Seq2[string, string]) {
	for k, v := range values {
		if err := template.CheckChars(k); err != nil {
			fe.Add(prefix, "placeholder name %q %v", k, err)
		} else if err := template.CheckChars(v); err != nil {
			fe.Add(prefix+"."+k, "%s %v", k, err)
		}
	}
}

// channelTemplate returns the company's template, which must be of channel
// ch.
func (s *Service) channelTemplate(ctx context.Context, companyID messaging.ID, ch messaging.Channel, id messaging.ID) (messaging.Template, error) {
	t, err := s.store.GetTemplate(ctx, companyID, id)
	if messaging.IsCode(err, messaging.NotFound) {
		return messaging.Template{}, messaging.TemplateNotFound(id)
	}
	if err != nil {
		return messaging.Template{}, fmt.Errorf("get template: %w", err)
	}
	if t.Channel != ch {
		return messaging.Template{}, messaging.Errorf(messaging.Invalid, messaging.NameInvalidTemplateChannel,
			"Template %s is a %s template; this endpoint needs a %s template", id, t.Channel, ch)
	}
	return t, nil
}

// campaignFor builds a campaign of template t. An SMS campaign sends with
// the template's sender, or the company's first approved sender when the
// template names none; a chat campaign with the template's chat service and
// fallback sender.
func (s *Service) campaignFor(ctx context.Context, t messaging.Template, status messaging.CampaignStatus, mode messaging.SendingMode) (messaging.Campaign, error) {
	now := s.clock()
	c := messaging.Campaign{
		ID: s.ids.New(), CompanyID: t.CompanyID, Channel: t.Channel, Mode: mode, Status: status,
		TemplateID: t.ID, TemplateName: t.Name, MessageType: t.MessageType, Config: t.Config,
		ChatServiceID: t.ChatServiceID, CreatedAt: now, UpdatedAt: now,
		ValidFor: time.Duration(t.ValidityPeriod) * time.Second,
	}
	switch {
	case t.Channel == messaging.ChannelSMS && t.SMSSenderID != 0:
		sd, err := s.approvedSender(ctx, t.CompanyID, t.SMSSenderID, messaging.NameInvalidSMSSender)
		if err != nil {
			return c, err
		}
		c.SMSSenderID = sd.ID
	case t.Channel == messaging.ChannelSMS:
		senders, err := s.store.ListSMSSenders(ctx, t.CompanyID, true)
		if err != nil {
			return c, fmt.Errorf("list senders: %w", err)
		}
		if len(senders) == 0 {
			return c, messaging.Errorf(messaging.Invalid, messaging.NameInvalidSMSSender,
				"The template names no SMS sender and the company has no approved one")
		}
		c.SMSSenderID = senders[0].ID
	case t.SMSFallbackEnabled:
		sd, err := s.approvedSender(ctx, t.CompanyID, t.SMSFallbackSenderID, messaging.NameInvalidFallbackSender)
		if err != nil {
			return c, err
		}
		c.FallbackSender = sd.ID
	}
	return c, nil
}

// Start starts a Ready campaign.
func (s *Service) Start(ctx context.Context, companyID, id messaging.ID) (messaging.Campaign, error) {
	c, err := s.store.GetCampaign(ctx, companyID, id)
	if err != nil {
		return messaging.Campaign{}, fmt.Errorf("start campaign: %w", err)
	}
	to, err := Next(c.Status, EventStart)
	if err != nil {
		return messaging.Campaign{}, err
	}
	err = s.store.TransitionCampaign(ctx, messaging.CampaignTransition{CompanyID: companyID, CampaignID: id, From: Sources(EventStart), To: to, At: s.clock()})
	if messaging.IsCode(err, messaging.Conflict) { // someone moved it meanwhile
		c, gerr := s.store.GetCampaign(ctx, companyID, id)
		if gerr != nil {
			return messaging.Campaign{}, fmt.Errorf("start campaign: %w", gerr)
		}
		_, err = Next(c.Status, EventStart)
		if err == nil {
			err = messaging.Errorf(messaging.Conflict, messaging.NameConflict, "Campaign %s changed while starting; try again", id)
		}
		return messaging.Campaign{}, err
	}
	if err != nil {
		return messaging.Campaign{}, fmt.Errorf("start campaign: %w", err)
	}
	s.notifyQueued()
	return s.GetCampaign(ctx, companyID, id)
}

// GetCampaign returns one of the company's campaigns, hidden ones
// included.
func (s *Service) GetCampaign(ctx context.Context, companyID, id messaging.ID) (messaging.Campaign, error) {
	c, err := s.store.GetCampaign(ctx, companyID, id)
	if messaging.IsCode(err, messaging.NotFound) {
		return messaging.Campaign{}, messaging.CampaignNotFound(id)
	}
	if err != nil {
		return messaging.Campaign{}, fmt.Errorf("get campaign: %w", err)
	}
	if c.SendWindow != nil {
		if c.WaitingForWindow, err = s.store.CountWaiting(ctx, c.ID, s.clock()); err != nil {
			return messaging.Campaign{}, fmt.Errorf("get campaign: %w", err)
		}
	}
	return c, nil
}

// ListCampaigns lists the company's visible campaigns, newest first.
func (s *Service) ListCampaigns(ctx context.Context, companyID messaging.ID, f messaging.CampaignFilter) ([]messaging.Campaign, int, error) {
	p, err := f.PageRequest.Normalize()
	if err != nil {
		return nil, 0, err
	}
	f.PageRequest = p
	cs, total, err := s.store.ListCampaigns(ctx, companyID, f)
	if err != nil {
		return nil, 0, fmt.Errorf("list campaigns: %w", err)
	}
	return cs, total, nil
}

// GetMessage returns one of the company's messages by its id (the id a
// send or an add-message answered), or a NotFound error.
func (s *Service) GetMessage(ctx context.Context, companyID, id messaging.ID) (messaging.Message, error) {
	m, err := s.store.GetMessage(ctx, companyID, id)
	if messaging.IsCode(err, messaging.NotFound) {
		return messaging.Message{}, messaging.MessageNotFound(id)
	}
	if err != nil {
		return messaging.Message{}, fmt.Errorf("get message: %w", err)
	}
	return m, nil
}

// ListMessages finds the company's messages by phone number, external
// user id or campaign (one of them is required; an unknown campaign is
// NotFound), optionally of one status, newest first.
func (s *Service) ListMessages(ctx context.Context, companyID messaging.ID, f messaging.MessageFilter) ([]messaging.Message, int, error) {
	if f.Phone == "" && f.ExternalUserID == "" && f.CampaignID.IsZero() {
		return nil, 0, messaging.Errorf(messaging.Invalid, messaging.NameBadRequest, "phoneNumber, externalUserId or campaignId is required")
	}
	if !f.CampaignID.IsZero() {
		if _, err := s.GetCampaign(ctx, companyID, f.CampaignID); err != nil {
			return nil, 0, err
		}
	}
	if f.Phone != "" {
		phone, ok := messaging.NormalizePhone(f.Phone)
		if !ok {
			return nil, 0, messaging.Invalidf("phoneNumber", "phoneNumber must be 10 to 15 digits, optionally after a '+'")
		}
		f.Phone = phone
	}
	if !f.From.IsZero() && !f.To.IsZero() && f.To.Before(f.From) {
		return nil, 0, messaging.Invalidf("endDate", "endDate must not be before startDate")
	}
	p, err := f.PageRequest.Normalize()
	if err != nil {
		return nil, 0, err
	}
	f.PageRequest = p
	ms, total, err := s.store.ListMessages(ctx, companyID, f)
	if err != nil {
		return nil, 0, fmt.Errorf("list messages: %w", err)
	}
	return ms, total, nil
}

// checkValidity checks a validityPeriod of a request.
func checkValidity(fe *messaging.FieldErrors, seconds int) {
	if err := messaging.CheckValidity("validityPeriod", seconds); err != nil {
		fe.Add("validityPeriod", "%s", err.(*messaging.Error).Fields["validityPeriod"])
	}
}
