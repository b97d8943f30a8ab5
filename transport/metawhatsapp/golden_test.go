package metawhatsapp

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/messaging"
)

// goldenSends are the messages whose requests must equal the files of
// testdata/send, written from Meta's reference.
func goldenSends() []struct {
	file string
	m    delivery.ChatSend
} {
	base := func(t messaging.MessageType, text string, c messaging.ChatConfig) delivery.ChatSend {
		return delivery.ChatSend{
			MessageID: msgID(testMessageID), ServiceID: 42, Sender: testPhoneID, To: "998901234567",
			Ref: 1731234567890123, TTL: time.Hour, Type: t, Text: text, Config: c,
		}
	}
	days := []messaging.SurveyOption{
		{OptionText: "Monday", OptionValue: "mon"}, {OptionText: "Tuesday", OptionValue: "tue"},
		{OptionText: "Wednesday", OptionValue: "wed"}, {OptionText: "Thursday", OptionValue: "thu"},
	}
	marks := []messaging.SurveyOption{
		{OptionText: "Great", OptionValue: "5"}, {OptionText: "Fine", OptionValue: "3"}, {OptionText: "Bad", OptionValue: "1"},
	}
	return []struct {
		file string
		m    delivery.ChatSend
	}{
		{"1_text.json", base(messaging.TypeSimpleText, "Your order 1042 is on its way: https://shop.example.com/t/1042", messaging.ChatConfig{})},
		{"2_image.json", base(messaging.TypeImageOnly, "", messaging.ChatConfig{ImageURL: "https://cdn.example.com/spring-sale.png"})},
		{"3_button_text.json", base(messaging.TypeButtonPlusText, "Your invoice for March is ready.",
			messaging.ChatConfig{ButtonText: "See invoice", ButtonURL: "https://billing.example.com/inv/2026-03"})},
		{"4_image_text.json", base(messaging.TypeImagePlusText, "New sneakers are in: 20% off this week.",
			messaging.ChatConfig{ImageURL: "https://cdn.example.com/sneakers.jpg", ButtonText: "Shop now", ButtonURL: "https://shop.example.com/sneakers"})},
		{"5_carousel.json", base(messaging.TypeCarousel, "Three picks for your balcony:", messaging.ChatConfig{Items: []messaging.CarouselItem{
			{Title: "Boston fern", ImageURL: "https://cdn.example.com/fern.jpg", ButtonText: "Buy", ButtonURL: "https://shop.example.com/fern"},
			{Title: "English ivy", ImageURL: "https://cdn.example.com/ivy.jpg", ButtonText: "Buy", ButtonURL: "https://shop.example.com/ivy"},
		}})},
		{"6_survey_buttons.json", base(messaging.TypeSurvey, "How was your delivery?", messaging.ChatConfig{Options: marks})},
		{"6_survey_list.json", base(messaging.TypeSurvey, "Which day suits you for the visit?", messaging.ChatConfig{Options: days, ButtonText: "Pick a day"})},
		{"7_video.json", base(messaging.TypeVideo, "Assembly takes five minutes.", messaging.ChatConfig{
			VideoURL: "https://cdn.example.com/how-to-assemble.mp4", ThumbnailURL: "https://cdn.example.com/thumb.jpg", FileSize: 8 << 20, Duration: 300})},
		{"7_video_button.json", base(messaging.TypeVideo, "Assembly takes five minutes.", messaging.ChatConfig{
			VideoURL: "https://cdn.example.com/how-to-assemble.mp4", ButtonText: "Full manual", ButtonURL: "https://shop.example.com/manual"})},
		{"8_document.json", base(messaging.TypeFile, "Your March invoice", messaging.ChatConfig{
			FileURL: "https://billing.example.com/inv/2026-03.pdf", FileName: "invoice-2026-03.pdf", FileType: "PDF"})},
		{"template_text.json", base(messaging.TypeSimpleText, "Hi Ana, order 1042 has shipped.", messaging.ChatConfig{
			ProviderTemplate: &messaging.ProviderTemplate{Name: "order_shipped", Language: "en_US", Parameters: []string{"Ana", "1042"}}})},
		{"template_image.json", base(messaging.TypeImageOnly, "", messaging.ChatConfig{ImageURL: "https://cdn.example.com/spring-sale.png",
			ProviderTemplate: &messaging.ProviderTemplate{Name: "spring_sale", Language: "es", Parameters: []string{"20%"}}})},
		{"template_survey.json", base(messaging.TypeSurvey, "How was your delivery?", messaging.ChatConfig{Options: marks[:2],
			ProviderTemplate: &messaging.ProviderTemplate{Name: "delivery_feedback", Language: "en"}})},
	}
}

func TestSendGolden(t *testing.T) {
	for _, tc := range goldenSends() {
		t.Run(tc.file, func(t *testing.T) {
			g := newFakeGraph(t)
			a := newTestAdapter(t, g.srv.URL+"/v23.0", &fakeReporter{})
			acc, err := a.SendChat(context.Background(), tc.m)
			if err != nil {
				t.Fatalf("SendChat: %v", err)
			}
			if acc.ProviderID != "wamid.HBgLMTU1NTAxMjM0NTYVAgARGBI3QUZDMUE1NzE0QjBGMDU3MTUA" || acc.AlreadySent {
				t.Errorf("accepted = %+v", acc)
			}
			reqs := g.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if r.method != "POST" || r.path != "/v23.0/"+testPhoneID+"/messages" {
				t.Errorf("request %s %s", r.method, r.path)
			}
			if r.auth != "Bearer "+testToken || r.contentType != "application/json" {
				t.Errorf("headers: auth %q, content type %q", r.auth, r.contentType)
			}
			if want := readFile(t, "send/"+tc.file); !jsonEqual(t, r.body, []byte(want)) {
				t.Errorf("body differs from testdata/send/%s:\n%s", tc.file, r.body)
			}
		})
	}
}

func TestWebhookGolden(t *testing.T) {
	first := msgID(testMessageID)
	tests := []struct {
		file     string
		statuses []delivery.ChatStatus
		inbound  []delivery.ChatInbound
	}{
		{file: "statuses.json", statuses: []delivery.ChatStatus{
			{MessageID: first, ProviderID: "wamid.HBgLMTU1NTAxMjM0NTYVAgARGBI3QUZDMUE1NzE0QjBGMDU3MTUA", Status: messaging.StatusDelivered,
				Detail: "delivered", At: time.Unix(1795000002, 0).UTC()},
			{MessageID: first, ProviderID: "wamid.HBgLMTU1NTAxMjM0NTYVAgARGBI3QUZDMUE1NzE0QjBGMDU3MTUA", Status: messaging.StatusSeen,
				Detail: "read", At: time.Unix(1795000060, 0).UTC()},
			{MessageID: msgID("0190f5a2-7c1f-7001-8a2b-3c4d5e6f7a8b"), ProviderID: "wamid.HBgLMTU1NTAxMjM0NTcVAgARGBI5QjE3RDc0NUIxQjgxNEY1RjUA",
				Status: messaging.StatusFailed, Reason: delivery.ReasonNotOnChannel, Detail: "131026 Message undeliverable", At: time.Unix(1795000003, 0).UTC()},
		}},
		{file: "status_reengagement.json", statuses: []delivery.ChatStatus{
			{ProviderID: "wamid.HBgLMTU1NTAxMjM0NTgVAgARGBIwMDFBQjI1QzY2RDdFOEY5MEEA", Status: messaging.StatusFailed,
				Reason: delivery.ReasonNotPermitted, Detail: "131047 Re-engagement message", At: time.Unix(1795000100, 0).UTC()},
		}},
		{file: "inbound_text.json", inbound: []delivery.ChatInbound{
			{ServiceID: 42, Kind: delivery.InboundText, Phone: "998901234567", Text: "Does it come in blue?", OptionIndex: -1, At: time.Unix(1795000200, 0).UTC()},
		}},
		{file: "inbound_button_reply.json", inbound: []delivery.ChatInbound{
			{ServiceID: 42, Kind: delivery.InboundReply, MessageID: first, Phone: "998901234567", Text: "Fine", OptionIndex: 1, At: time.Unix(1795000300, 0).UTC()},
		}},
		{file: "inbound_list_reply.json", inbound: []delivery.ChatInbound{
			{ServiceID: 42, Kind: delivery.InboundReply, MessageID: first, Phone: "998901234567", Text: "Thursday", OptionIndex: 3, At: time.Unix(1795000400, 0).UTC()},
		}},
		{file: "inbound_quick_reply.json", inbound: []delivery.ChatInbound{
			{ServiceID: 42, Kind: delivery.InboundReply, MessageID: first, Phone: "998901234567", Text: "Great", OptionIndex: 0, At: time.Unix(1795000500, 0).UTC()},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			rep := &fakeReporter{}
			a := newTestAdapter(t, "https://graph.example.com/v23.0", rep)
			w := post(t, a, []byte(readFile(t, "webhook/"+tc.file)), "")
			if w.Code != 200 {
				t.Fatalf("status %d: %s", w.Code, w.Body)
			}
			calls, inbound := rep.calls()
			if tc.statuses == nil {
				if len(calls) != 0 {
					t.Errorf("ChatStatuses called %d times, want none", len(calls))
				}
			} else if len(calls) != 1 || !reflect.DeepEqual(calls[0], tc.statuses) {
				t.Errorf("ChatStatuses calls = %+v\nwant one call with %+v", calls, tc.statuses)
			}
			if !reflect.DeepEqual(inbound, tc.inbound) {
				t.Errorf("ChatInbound = %+v\nwant %+v", inbound, tc.inbound)
			}
		})
	}
}
