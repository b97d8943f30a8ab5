package survey_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/store/memstore"
	"github.com/heraldhq/herald/survey"
)

// answerFixture is a survey campaign of one company on a memstore.
type answerFixture struct {
	st  *memstore.Store
	ids *messaging.IDGenerator
	now time.Time
	co  messaging.Company
	c   messaging.Campaign
}

func newAnswerFixture(t *testing.T, st *memstore.Store, msgType messaging.MessageType, cfg *messaging.ChatConfig) *answerFixture {
	t.Helper()
	f := &answerFixture{st: st, now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	f.ids = messaging.NewIDGenerator(func() time.Time { return f.now })
	f.co = messaging.Company{ID: f.ids.New(), Name: "Acme " + f.ids.New().String(), Active: true, CreatedAt: f.now}
	require.NoError(t, st.CreateCompany(t.Context(), &f.co))
	f.c = messaging.Campaign{ID: f.ids.New(), CompanyID: f.co.ID, Channel: messaging.ChannelChat, Mode: messaging.ModeTransactional,
		Status: messaging.CampaignInProgress, MessageType: msgType, Config: cfg, CreatedAt: f.now, UpdatedAt: f.now, StartedAt: &f.now}
	require.NoError(t, st.CreateCampaign(t.Context(), &f.c, 1000))
	return f
}

// messages admits n Seen chat messages of the campaign.
func (f *answerFixture) messages(t *testing.T, n int) []messaging.Message {
	t.Helper()
	ptrs := make([]*messaging.Message, n)
	for i := range ptrs {
		ptrs[i] = &messaging.Message{ID: f.ids.New(), CompanyID: f.co.ID, CampaignID: f.c.ID, Channel: messaging.ChannelChat,
			Phone: fmt.Sprintf("9989012%05d", i), Content: "How was it?", Status: messaging.StatusSeen, DueAt: f.now, CreatedAt: f.now, UpdatedAt: f.now}
	}
	require.NoError(t, f.st.AdmitMessages(t.Context(), f.co.ID, ptrs, 1000))
	out := make([]messaging.Message, n)
	for i, p := range ptrs {
		out[i] = *p
	}
	return out
}

func (f *answerFixture) results(t *testing.T) []messaging.SurveyResult {
	t.Helper()
	rs, _, err := f.st.ListResults(t.Context(), f.co.ID, messaging.SurveyResultFilter{CampaignID: f.c.ID, PageRequest: messaging.PageRequest{Page: 1, PageSize: 100}})
	require.NoError(t, err)
	return rs
}

// TestRecordAnswer: the first answer counts, with the text of its option
// from the message's own options or the campaign's; an option outside
// them is refused (Invalid) and not recorded; a reply to a message of a
// campaign that is no survey is not recorded.
func TestRecordAnswer(t *testing.T) {
	ctx := t.Context()
	st := memstore.New()
	cfg := &messaging.ChatConfig{Options: []messaging.SurveyOption{{OptionText: "Great", OptionValue: "g"}, {OptionText: "Bad", OptionValue: "b"}}}
	f := newAnswerFixture(t, st, messaging.TypeSurvey, cfg)
	svc := must(survey.New(survey.Config{Store: st}))
	msgs := f.messages(t, 2)
	own := msgs[1]
	own.Config = &messaging.ChatConfig{Options: []messaging.SurveyOption{{OptionText: "Yes"}, {OptionText: "No"}, {OptionText: "Maybe"}}}

	for _, i := range []int{2, 99} {
		stored, err := svc.RecordAnswer(ctx, msgs[0], i, f.now)
		require.True(t, messaging.IsCode(err, messaging.Invalid), "option %d: %v", i, err)
		require.False(t, stored)
	}
	require.Empty(t, f.results(t), "a refused answer is not recorded")

	stored, err := svc.RecordAnswer(ctx, msgs[0], 1, f.now)
	require.NoError(t, err)
	require.True(t, stored)
	stored, err = svc.RecordAnswer(ctx, msgs[0], 0, f.now.Add(time.Second))
	require.NoError(t, err)
	require.False(t, stored, "the first answer counts")
	stored, err = svc.RecordAnswer(ctx, own, 2, f.now)
	require.NoError(t, err)
	require.True(t, stored, "the message's own options")

	rs := f.results(t)
	require.Len(t, rs, 2)
	byMessage := map[messaging.ID]messaging.SurveyResult{rs[0].MessageID: rs[0], rs[1].MessageID: rs[1]}
	require.Equal(t, "Bad", byMessage[msgs[0].ID].OptionText)
	require.Equal(t, "Maybe", byMessage[own.ID].OptionText)
	require.Equal(t, msgs[0].ID.String(), byMessage[msgs[0].ID].TrackingData)

	text := newAnswerFixture(t, st, messaging.TypeSimpleText, nil)
	plain := text.messages(t, 1)
	stored, err = svc.RecordAnswer(ctx, plain[0], 0, f.now)
	require.NoError(t, err)
	require.False(t, stored, "a reply to a message that is no survey's")
	require.Empty(t, text.results(t))
}

// replyStore holds the first RecordResults until release is closed,
// records the size of each, and fails a group holding the answer of
// message refuse with option index 0 (as a database refusing one row
// would).
type replyStore struct {
	*memstore.Store
	refuse  messaging.ID
	entered chan struct{}
	release chan struct{}
	once    sync.Once
	mu      sync.Mutex
	sizes   []int
}

func (s *replyStore) RecordResults(ctx context.Context, rs []*messaging.SurveyResult) ([]bool, error) {
	s.mu.Lock()
	s.sizes = append(s.sizes, len(rs))
	s.mu.Unlock()
	first := false
	s.once.Do(func() { first = true })
	if first {
		close(s.entered)
		<-s.release
	}
	for _, r := range rs {
		if r.MessageID == s.refuse && r.OptionIndex == 0 {
			return nil, errors.New("row refused")
		}
	}
	return s.Store.RecordResults(ctx, rs)
}

// TestRecordAnswerGroups: the answers that arrive while one is being
// written are written together, the first answer to
// each message kept; when a group's write fails, its answers are written
// one by one, so that the error reaches only the caller it concerns.
func TestRecordAnswerGroups(t *testing.T) {
	ctx := t.Context()
	st := &replyStore{Store: memstore.New(), entered: make(chan struct{}), release: make(chan struct{})}
	cfg := &messaging.ChatConfig{Options: []messaging.SurveyOption{{OptionText: "Yes", OptionValue: "y"}, {OptionText: "No", OptionValue: "n"}}}
	f := newAnswerFixture(t, st.Store, messaging.TypeSurvey, cfg)
	const n = 8
	msgs := f.messages(t, n)
	st.refuse = msgs[2].ID
	svc := must(survey.New(survey.Config{Store: st}))
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	answer := func(m messaging.Message, option int) {
		defer wg.Done()
		_, err := svc.RecordAnswer(ctx, m, option, f.now)
		errs <- err
	}
	wg.Add(1)
	go answer(msgs[0], 0)
	<-st.entered
	// While the first is held: one answer for every other message, a
	// second answer to msgs[1], and a refused one for msgs[2] after its
	// first.
	for _, m := range msgs[1:] {
		wg.Add(1)
		go answer(m, 1)
	}
	require.Eventually(t, func() bool { return survey.QueuedAnswers(svc) == n-1 }, 10*time.Second, time.Millisecond)
	wg.Add(2)
	go answer(msgs[1], 0)
	go answer(msgs[2], 0)
	require.Eventually(t, func() bool { return survey.QueuedAnswers(svc) == n+1 }, 10*time.Second, time.Millisecond)
	close(st.release)
	wg.Wait()
	close(errs)
	var failed int
	for err := range errs {
		if err != nil {
			failed++
			require.ErrorContains(t, err, "row refused")
		}
	}
	require.Equal(t, 1, failed, "only the refused answer's caller fails")

	st.mu.Lock()
	sizes := append([]int(nil), st.sizes...)
	st.mu.Unlock()
	require.Equal(t, 1, sizes[0])
	require.Equal(t, n+1, sizes[1], "everything queued meanwhile in one write")
	require.Len(t, sizes, 2+n+1, "the failed group, then each of its answers on its own")
	rs, total, err := st.ListResults(ctx, f.co.ID, messaging.SurveyResultFilter{CampaignID: f.c.ID, PageRequest: messaging.PageRequest{Page: 1, PageSize: 20}})
	require.NoError(t, err)
	require.Equal(t, n, total)
	for _, r := range rs {
		want := 1
		if r.MessageID == msgs[0].ID {
			want = 0
		}
		require.Equal(t, want, r.OptionIndex, "the first answer to each message")
	}
}
