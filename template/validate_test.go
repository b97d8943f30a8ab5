package template_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/template"
)

// s returns a text of n code points, each two bytes long in UTF-8, so that
// a byte-counting limit would fail the "ok" side of every case.
func s(n int) string { return strings.Repeat("é", n) }

func smsTemplate() *messaging.Template {
	return &messaging.Template{Name: "welcome", Channel: messaging.ChannelSMS, MessageType: 1, Content: "Hi {{name}}"}
}

func item(i int) messaging.CarouselItem {
	return messaging.CarouselItem{
		Title:      fmt.Sprintf("Card %d", i),
		ImageURL:   fmt.Sprintf("https://cdn.example.com/card%d.png", i),
		ButtonText: "Buy",
		ButtonURL:  fmt.Sprintf("https://shop.example.com/p/%d", i),
	}
}

func items(n int) []messaging.CarouselItem {
	out := make([]messaging.CarouselItem, n)
	for i := range out {
		out[i] = item(i)
	}
	return out
}

func options(n int) []messaging.SurveyOption {
	out := make([]messaging.SurveyOption, n)
	for i := range out {
		out[i] = messaging.SurveyOption{OptionText: fmt.Sprintf("Option %d", i), OptionValue: fmt.Sprintf("v%d", i)}
	}
	return out
}

// chatTemplate returns a valid chat template of type mt, every optional
// part left out.
func chatTemplate(mt messaging.MessageType) *messaging.Template {
	t := &messaging.Template{Name: "promo", Channel: messaging.ChannelChat, MessageType: mt, ChatServiceID: 7,
		Content: "Hello {{name}}"}
	switch mt {
	case messaging.TypeImageOnly:
		t.Content = ""
		t.Config = &messaging.ChatConfig{ImageURL: "https://cdn.example.com/a.jpg"}
	case messaging.TypeButtonPlusText:
		t.Config = &messaging.ChatConfig{ButtonText: "Open", ButtonURL: "https://shop.example.com/o/{{orderId}}"}
	case messaging.TypeImagePlusText:
		t.Config = &messaging.ChatConfig{ImageURL: "https://cdn.example.com/a.jpg", ButtonText: "Open",
			ButtonURL: "https://shop.example.com/"}
	case messaging.TypeCarousel:
		t.Content = ""
		t.Config = &messaging.ChatConfig{Items: items(3)}
	case messaging.TypeSurvey:
		t.Content = "Did you like it?"
		t.Config = &messaging.ChatConfig{Options: options(2)}
	case messaging.TypeVideo:
		t.Content = ""
		t.Config = &messaging.ChatConfig{VideoURL: "https://cdn.example.com/v.mp4"}
	case messaging.TypeFile:
		t.Content = ""
		t.Config = &messaging.ChatConfig{FileURL: "https://files.example.com/invoice.pdf", FileName: "invoice.pdf", FileType: "PDF"}
	}
	return t
}

type validateCase struct {
	name string
	tmpl func() *messaging.Template
	want string // field expected to fail; "" when the template is valid
}

// with returns a template builder: base, then mut.
func with(base func() *messaging.Template, mut func(t *messaging.Template)) func() *messaging.Template {
	return func() *messaging.Template {
		t := base()
		mut(t)
		return t
	}
}

func chat(mt messaging.MessageType) func() *messaging.Template {
	return func() *messaging.Template { return chatTemplate(mt) }
}

func runValidate(t *testing.T, cases []validateCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := template.Validate(tc.tmpl())
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			var e *messaging.Error
			require.True(t, errors.As(err, &e), "want *messaging.Error, got %T", err)
			require.Equal(t, messaging.Invalid, e.Code)
			require.Equal(t, messaging.NameBadRequest, e.Name)
			require.Contains(t, e.Fields, tc.want, "fields: %v", e.Fields)
		})
	}
}

func TestValidateCommonAndSMS(t *testing.T) {
	sms := smsTemplate
	runValidate(t, []validateCase{
		{"sms valid", sms, ""},
		{"sms messageType 0 accepted", with(sms, func(t *messaging.Template) { t.MessageType = 0 }), ""},
		{"sms messageType 2", with(sms, func(t *messaging.Template) { t.MessageType = 2 }), "messageType"},
		{"name missing", with(sms, func(t *messaging.Template) { t.Name = "" }), "name"},
		{"name blank", with(sms, func(t *messaging.Template) { t.Name = "  \t" }), "name"},
		{"name 200", with(sms, func(t *messaging.Template) { t.Name = s(200) }), ""},
		{"name 201", with(sms, func(t *messaging.Template) { t.Name = s(201) }), "name"},
		{"description 500", with(sms, func(t *messaging.Template) { t.Description = s(500) }), ""},
		{"description 501", with(sms, func(t *messaging.Template) { t.Description = s(501) }), "description"},
		{"description of 501 spaces", with(sms, func(t *messaging.Template) { t.Description = strings.Repeat(" ", 501) }), "description"},
		{"channel unknown", with(sms, func(t *messaging.Template) { t.Channel = "Sms" }), "channelType"},
		{"sms content missing", with(sms, func(t *messaging.Template) { t.Content = "" }), "templateContent"},
		{"sms content blank", with(sms, func(t *messaging.Template) { t.Content = "\n " }), "templateContent"},
		{"sms content 1600", with(sms, func(t *messaging.Template) { t.Content = s(1600) }), ""},
		{"sms content 1601", with(sms, func(t *messaging.Template) { t.Content = s(1601) }), "templateContent"},
		{"sms content 1600 emoji", with(sms, func(t *messaging.Template) { t.Content = strings.Repeat("😀", 1600) }), ""},
		{"sms sender given", with(sms, func(t *messaging.Template) { t.SMSSenderID = 3 }), ""},
		{"sms sender negative", with(sms, func(t *messaging.Template) { t.SMSSenderID = -1 }), "smsSenderId"},
	})
}

func TestValidateChatCommon(t *testing.T) {
	var cases []validateCase
	for mt := messaging.TypeSimpleText; mt <= messaging.TypeFile; mt++ {
		limit := 1000
		if mt == messaging.TypeSurvey {
			limit = 85
		}
		cases = append(cases,
			validateCase{mt.String() + " valid", chat(mt), ""},
			validateCase{fmt.Sprintf("%s content %d", mt, limit),
				with(chat(mt), func(t *messaging.Template) { t.Content = s(limit) }), ""},
			validateCase{fmt.Sprintf("%s content %d", mt, limit+1),
				with(chat(mt), func(t *messaging.Template) { t.Content = s(limit + 1) }), "templateContent"},
			validateCase{mt.String() + " no chat service",
				with(chat(mt), func(t *messaging.Template) { t.ChatServiceID = 0 }), "chatServiceId"},
		)
		want := ""
		switch mt {
		case messaging.TypeSimpleText, messaging.TypeButtonPlusText, messaging.TypeImagePlusText, messaging.TypeSurvey:
			want = "templateContent"
		}
		cases = append(cases, validateCase{mt.String() + " content empty",
			with(chat(mt), func(t *messaging.Template) { t.Content = "" }), want})
	}
	simple := chat(messaging.TypeSimpleText)
	cases = append(cases,
		validateCase{"messageType 0", with(simple, func(t *messaging.Template) { t.MessageType = 0 }), "messageType"},
		validateCase{"messageType 9", with(simple, func(t *messaging.Template) { t.MessageType = 9 }), "messageType"},
		validateCase{"chat service negative", with(simple, func(t *messaging.Template) { t.ChatServiceID = -4 }), "chatServiceId"},
		validateCase{"fallback disabled, fields empty", simple, ""},
		validateCase{"fallback valid", with(simple, func(t *messaging.Template) {
			t.SMSFallbackEnabled, t.SMSFallbackContent, t.SMSFallbackSenderID = true, "Hi {{name}}", 2
		}), ""},
		validateCase{"fallback 1600", with(simple, func(t *messaging.Template) {
			t.SMSFallbackEnabled, t.SMSFallbackContent, t.SMSFallbackSenderID = true, s(1600), 2
		}), ""},
		validateCase{"fallback 1601", with(simple, func(t *messaging.Template) {
			t.SMSFallbackEnabled, t.SMSFallbackContent, t.SMSFallbackSenderID = true, s(1601), 2
		}), "smsFallbackTemplateContent"},
		validateCase{"fallback content missing", with(simple, func(t *messaging.Template) {
			t.SMSFallbackEnabled, t.SMSFallbackSenderID = true, 2
		}), "smsFallbackTemplateContent"},
		validateCase{"fallback sender missing", with(simple, func(t *messaging.Template) {
			t.SMSFallbackEnabled, t.SMSFallbackContent = true, "Hi"
		}), "smsFallbackSenderId"},
		validateCase{"simple text ignores config", with(simple, func(t *messaging.Template) {
			t.Config = &messaging.ChatConfig{ImageURL: "not a url"}
		}), ""},
	)
	runValidate(t, cases)
}

func TestValidateURLs(t *testing.T) {
	img := func(u string) func() *messaging.Template {
		return with(chat(messaging.TypeImageOnly), func(t *messaging.Template) { t.Config.ImageURL = u })
	}
	const f = "typeSpecificConfig.imageUrl"
	runValidate(t, []validateCase{
		{"https", img("https://cdn.example.com/a.png?w=1#x"), ""},
		{"upper-case scheme", img("HTTPS://cdn.example.com/a.png"), ""},
		{"port", img("https://cdn.example.com:8443/a.png"), ""},
		{"IPv4 host", img("https://192.0.2.10/a.png"), ""},
		{"IPv6 host", img("https://[2001:db8::1]/a.png"), ""},
		{"missing", img(""), f},
		{"http", img("http://cdn.example.com/a.png"), f},
		{"ftp", img("ftp://cdn.example.com/a.png"), f},
		{"no scheme", img("cdn.example.com/a.png"), f},
		{"no host", img("https:///a.png"), f},
		{"space", img("https://cdn.example.com/a b.png"), f},
		{"credentials", img("https://user:pw@cdn.example.com/a.png"), f},
		{"bad host", img("https://cdn_example!.com/a.png"), f},
		{"host with hyphen at end", img("https://cdn-.example.com/a.png"), f},
		{"port out of range", img("https://cdn.example.com:70000/a.png"), f},
		{"2048 bytes", img("https://cdn.example.com/" + strings.Repeat("a", 2048-24)), ""},
		{"2049 bytes", img("https://cdn.example.com/" + strings.Repeat("a", 2049-24)), f},
		{"placeholder in imageUrl", img("https://cdn.example.com/{{id}}.png"), f},
	})
}

func TestValidateButtonPlusText(t *testing.T) {
	b := chat(messaging.TypeButtonPlusText)
	set := func(mut func(c *messaging.ChatConfig)) func() *messaging.Template {
		return with(b, func(t *messaging.Template) { mut(t.Config) })
	}
	runValidate(t, []validateCase{
		{"button text 1", set(func(c *messaging.ChatConfig) { c.ButtonText = "O" }), ""},
		{"button text 30", set(func(c *messaging.ChatConfig) { c.ButtonText = s(30) }), ""},
		{"button text 31", set(func(c *messaging.ChatConfig) { c.ButtonText = s(31) }), "typeSpecificConfig.buttonText"},
		{"button text empty", set(func(c *messaging.ChatConfig) { c.ButtonText = "" }), "typeSpecificConfig.buttonText"},
		{"button url empty", set(func(c *messaging.ChatConfig) { c.ButtonURL = "" }), "typeSpecificConfig.buttonUrl"},
		{"button url http", set(func(c *messaging.ChatConfig) { c.ButtonURL = "http://shop.example.com/" }), "typeSpecificConfig.buttonUrl"},
		{"placeholders in path and query", set(func(c *messaging.ChatConfig) {
			c.ButtonURL = "https://shop.example.com/o/{{orderId}}?u={{user_id}}"
		}), ""},
		{"placeholder host", set(func(c *messaging.ChatConfig) { c.ButtonURL = "https://{{host}}/o" }), "typeSpecificConfig.buttonUrl"},
		{"placeholder in host", set(func(c *messaging.ChatConfig) { c.ButtonURL = "https://shop{{n}}.example.com/" }), "typeSpecificConfig.buttonUrl"},
		{"placeholder whole url", set(func(c *messaging.ChatConfig) { c.ButtonURL = "{{link}}" }), "typeSpecificConfig.buttonUrl"},
		{"placeholder scheme", set(func(c *messaging.ChatConfig) { c.ButtonURL = "{{scheme}}://shop.example.com/" }), "typeSpecificConfig.buttonUrl"},
		{"config missing: text", with(b, func(t *messaging.Template) { t.Config = nil }), "typeSpecificConfig.buttonText"},
		{"config missing: url", with(b, func(t *messaging.Template) { t.Config = nil }), "typeSpecificConfig.buttonUrl"},
	})
}

func TestValidateImagePlusText(t *testing.T) {
	b := chat(messaging.TypeImagePlusText)
	set := func(mut func(c *messaging.ChatConfig)) func() *messaging.Template {
		return with(b, func(t *messaging.Template) { mut(t.Config) })
	}
	runValidate(t, []validateCase{
		{"image missing", set(func(c *messaging.ChatConfig) { c.ImageURL = "" }), "typeSpecificConfig.imageUrl"},
		{"image http", set(func(c *messaging.ChatConfig) { c.ImageURL = "http://cdn.example.com/a.jpg" }), "typeSpecificConfig.imageUrl"},
		{"button text 30", set(func(c *messaging.ChatConfig) { c.ButtonText = s(30) }), ""},
		{"button text 31", set(func(c *messaging.ChatConfig) { c.ButtonText = s(31) }), "typeSpecificConfig.buttonText"},
		{"button text missing", set(func(c *messaging.ChatConfig) { c.ButtonText = "" }), "typeSpecificConfig.buttonText"},
		{"button url missing", set(func(c *messaging.ChatConfig) { c.ButtonURL = "" }), "typeSpecificConfig.buttonUrl"},
		{"button url placeholders", set(func(c *messaging.ChatConfig) { c.ButtonURL = "https://shop.example.com/{{id}}" }), ""},
	})
}

func TestValidateCarousel(t *testing.T) {
	b := chat(messaging.TypeCarousel)
	setItems := func(n int) func() *messaging.Template {
		return with(b, func(t *messaging.Template) { t.Config.Items = items(n) })
	}
	setItem := func(mut func(it *messaging.CarouselItem)) func() *messaging.Template {
		return with(b, func(t *messaging.Template) { mut(&t.Config.Items[1]) })
	}
	const p = "typeSpecificConfig.items[1]."
	runValidate(t, []validateCase{
		{"0 items", setItems(0), "typeSpecificConfig.items"},
		{"1 item", setItems(1), "typeSpecificConfig.items"},
		{"2 items", setItems(2), ""},
		{"5 items", setItems(5), ""},
		{"6 items", setItems(6), "typeSpecificConfig.items"},
		{"no config", with(b, func(t *messaging.Template) { t.Config = nil }), "typeSpecificConfig.items"},
		{"content given", with(b, func(t *messaging.Template) { t.Content = "Our picks" }), ""},
		{"title 1", setItem(func(it *messaging.CarouselItem) { it.Title = "A" }), p + "title"},
		{"title 2", setItem(func(it *messaging.CarouselItem) { it.Title = s(2) }), ""},
		{"title 38", setItem(func(it *messaging.CarouselItem) { it.Title = s(38) }), ""},
		{"title 39", setItem(func(it *messaging.CarouselItem) { it.Title = s(39) }), p + "title"},
		{"title missing", setItem(func(it *messaging.CarouselItem) { it.Title = "" }), p + "title"},
		{"image missing", setItem(func(it *messaging.CarouselItem) { it.ImageURL = "" }), p + "imageUrl"},
		{"image http", setItem(func(it *messaging.CarouselItem) { it.ImageURL = "http://cdn.example.com/x.png" }), p + "imageUrl"},
		{"image placeholder", setItem(func(it *messaging.CarouselItem) { it.ImageURL = "https://cdn.example.com/{{x}}.png" }), p + "imageUrl"},
		{"button text missing", setItem(func(it *messaging.CarouselItem) { it.ButtonText = "" }), p + "buttonText"},
		{"button text 10", setItem(func(it *messaging.CarouselItem) { it.ButtonText = s(10) }), ""},
		{"button text 11", setItem(func(it *messaging.CarouselItem) { it.ButtonText = s(11) }), p + "buttonText"},
		{"button url missing", setItem(func(it *messaging.CarouselItem) { it.ButtonURL = "" }), p + "buttonUrl"},
		{"button url placeholder", setItem(func(it *messaging.CarouselItem) { it.ButtonURL = "https://shop.example.com/{{x}}" }), p + "buttonUrl"},
		{"secondary 12 with url", setItem(func(it *messaging.CarouselItem) {
			it.SecondaryButtonText, it.SecondaryButtonURL = s(12), "https://shop.example.com/more"
		}), ""},
		{"secondary 13 with url", setItem(func(it *messaging.CarouselItem) {
			it.SecondaryButtonText, it.SecondaryButtonURL = s(13), "https://shop.example.com/more"
		}), p + "secondaryButtonText"},
		{"secondary text without url", setItem(func(it *messaging.CarouselItem) { it.SecondaryButtonText = "More" }), p + "secondaryButtonUrl"},
		{"secondary url without text", setItem(func(it *messaging.CarouselItem) {
			it.SecondaryButtonURL = "https://shop.example.com/more"
		}), p + "secondaryButtonText"},
		{"secondary blank text", setItem(func(it *messaging.CarouselItem) {
			it.SecondaryButtonText, it.SecondaryButtonURL = "  ", "https://shop.example.com/more"
		}), p + "secondaryButtonText"},
		{"secondary url http", setItem(func(it *messaging.CarouselItem) {
			it.SecondaryButtonText, it.SecondaryButtonURL = "More", "http://shop.example.com/more"
		}), p + "secondaryButtonUrl"},
	})
}

func TestValidateSurvey(t *testing.T) {
	b := chat(messaging.TypeSurvey)
	setOpts := func(n int) func() *messaging.Template {
		return with(b, func(t *messaging.Template) { t.Config.Options = options(n) })
	}
	setOpt := func(mut func(o *messaging.SurveyOption)) func() *messaging.Template {
		return with(b, func(t *messaging.Template) { mut(&t.Config.Options[1]) })
	}
	const p = "typeSpecificConfig.options[1]."
	runValidate(t, []validateCase{
		{"1 option", setOpts(1), "typeSpecificConfig.options"},
		{"2 options", setOpts(2), ""},
		{"5 options", setOpts(5), ""},
		{"6 options", setOpts(6), "typeSpecificConfig.options"},
		{"no config", with(b, func(t *messaging.Template) { t.Config = nil }), "typeSpecificConfig.options"},
		{"option text missing", setOpt(func(o *messaging.SurveyOption) { o.OptionText = "" }), p + "optionText"},
		{"option text 1", setOpt(func(o *messaging.SurveyOption) { o.OptionText = "Y" }), ""},
		{"option text 50", setOpt(func(o *messaging.SurveyOption) { o.OptionText = s(50) }), ""},
		{"option text 51", setOpt(func(o *messaging.SurveyOption) { o.OptionText = s(51) }), p + "optionText"},
		{"option value missing", setOpt(func(o *messaging.SurveyOption) { o.OptionValue = "" }), p + "optionValue"},
		{"option value 100", setOpt(func(o *messaging.SurveyOption) { o.OptionValue = s(100) }), ""},
		{"option value 101", setOpt(func(o *messaging.SurveyOption) { o.OptionValue = s(101) }), p + "optionValue"},
	})
}

func TestValidateVideo(t *testing.T) {
	b := chat(messaging.TypeVideo)
	set := func(mut func(c *messaging.ChatConfig)) func() *messaging.Template {
		return with(b, func(t *messaging.Template) { mut(t.Config) })
	}
	const p = "typeSpecificConfig."
	runValidate(t, []validateCase{
		{"video missing", set(func(c *messaging.ChatConfig) { c.VideoURL = "" }), p + "videoUrl"},
		{"video http", set(func(c *messaging.ChatConfig) { c.VideoURL = "http://cdn.example.com/v.mp4" }), p + "videoUrl"},
		{"video placeholder", set(func(c *messaging.ChatConfig) { c.VideoURL = "https://cdn.example.com/{{v}}.mp4" }), p + "videoUrl"},
		{"thumbnail given", set(func(c *messaging.ChatConfig) { c.ThumbnailURL = "https://cdn.example.com/t.jpg" }), ""},
		{"thumbnail http", set(func(c *messaging.ChatConfig) { c.ThumbnailURL = "http://cdn.example.com/t.jpg" }), p + "thumbnailUrl"},
		{"button both", set(func(c *messaging.ChatConfig) { c.ButtonText, c.ButtonURL = s(30), "https://shop.example.com/" }), ""},
		{"button text 31", set(func(c *messaging.ChatConfig) { c.ButtonText, c.ButtonURL = s(31), "https://shop.example.com/" }), p + "buttonText"},
		{"button text only", set(func(c *messaging.ChatConfig) { c.ButtonText = "Watch" }), p + "buttonUrl"},
		{"button url only", set(func(c *messaging.ChatConfig) { c.ButtonURL = "https://shop.example.com/" }), p + "buttonText"},
		{"button url placeholder", set(func(c *messaging.ChatConfig) {
			c.ButtonText, c.ButtonURL = "Watch", "https://shop.example.com/{{id}}"
		}), p + "buttonUrl"},
		{"size and duration", set(func(c *messaging.ChatConfig) { c.FileSize, c.Duration = 200<<20, 30 }), ""},
		{"size over 200 MB", set(func(c *messaging.ChatConfig) { c.FileSize = 200<<20 + 1 }), p + "fileSize"},
		{"size negative", set(func(c *messaging.ChatConfig) { c.FileSize = -1 }), p + "fileSize"},
		{"duration negative", set(func(c *messaging.ChatConfig) { c.Duration = -1 }), p + "duration"},
	})
}

func TestValidateFile(t *testing.T) {
	b := chat(messaging.TypeFile)
	set := func(mut func(c *messaging.ChatConfig)) func() *messaging.Template {
		return with(b, func(t *messaging.Template) { mut(t.Config) })
	}
	const p = "typeSpecificConfig."
	cases := []validateCase{
		{"url missing", set(func(c *messaging.ChatConfig) { c.FileURL = "" }), p + "fileUrl"},
		{"url http", set(func(c *messaging.ChatConfig) { c.FileURL = "http://files.example.com/a.pdf" }), p + "fileUrl"},
		{"url placeholders", set(func(c *messaging.ChatConfig) { c.FileURL = "https://files.example.com/{{invoiceId}}.pdf" }), ""},
		{"url placeholder host", set(func(c *messaging.ChatConfig) { c.FileURL = "https://{{bucket}}/a.pdf" }), p + "fileUrl"},
		{"name missing", set(func(c *messaging.ChatConfig) { c.FileName = "" }), p + "fileName"},
		{"name 255", set(func(c *messaging.ChatConfig) { c.FileName = s(255) }), ""},
		{"name 256", set(func(c *messaging.ChatConfig) { c.FileName = s(256) }), p + "fileName"},
		{"type missing", set(func(c *messaging.ChatConfig) { c.FileType = "" }), p + "fileType"},
		{"type exe", set(func(c *messaging.ChatConfig) { c.FileType = "EXE" }), p + "fileType"},
		{"type with dot", set(func(c *messaging.ChatConfig) { c.FileType = ".pdf" }), p + "fileType"},
		{"type mp4", set(func(c *messaging.ChatConfig) { c.FileType = "mp4" }), p + "fileType"},
		{"no config", with(b, func(t *messaging.Template) { t.Config = nil }), p + "fileUrl"},
	}
	for _, ft := range []string{"PDF", "DOC", "DOCX", "TXT", "RTF", "XLS", "XLSX", "CSV", "PPT", "PPTX", "ZIP", "RAR"} {
		for _, v := range []string{ft, strings.ToLower(ft), strings.ToUpper(ft[:1]) + strings.ToLower(ft[1:])} {
			cases = append(cases, validateCase{"type " + v, set(func(c *messaging.ChatConfig) { c.FileType = v }), ""})
		}
	}
	runValidate(t, cases)
	require.Len(t, template.FileTypes(), 12)
}

func TestValidateReportsEveryField(t *testing.T) {
	tm := chatTemplate(messaging.TypeCarousel)
	tm.Name = ""
	tm.ChatServiceID = 0
	tm.Config.Items[0].Title = "x"
	tm.Config.Items[2].ButtonText = s(11)
	tm.SMSFallbackEnabled = true

	fe := template.Check(tm)
	require.Equal(t, []string{
		"chatServiceId", "name", "smsFallbackSenderId", "smsFallbackTemplateContent",
		"typeSpecificConfig.items[0].title", "typeSpecificConfig.items[2].buttonText",
	}, slices.Sorted(maps.Keys(fe)))
	require.Contains(t, fe["typeSpecificConfig.items[2].buttonText"], "10")

	err := fe.Err()
	var e *messaging.Error
	require.True(t, errors.As(err, &e))
	require.Len(t, e.Fields, 6)
	require.NoError(t, template.Check(chatTemplate(messaging.TypeCarousel)).Err())
}

func TestCheckHTTPSURL(t *testing.T) {
	require.NoError(t, template.CheckHTTPSURL("https://example.com/a/{{id}}"))
	for _, u := range []string{"", "http://example.com", "https://", "https://{{h}}/", "https://ex ample.com"} {
		require.Error(t, template.CheckHTTPSURL(u), u)
	}
}
