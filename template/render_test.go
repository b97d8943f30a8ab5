package template_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/template"
)

func TestCompileTemplateRender(t *testing.T) {
	rec := map[string]string{"name": "Ann", "id": "42", "x": "X"}
	req := map[string]string{"shop": "Herald"}
	cases := []struct {
		name       string
		tmpl       *messaging.Template
		content    string
		fallback   string
		wantConfig *messaging.ChatConfig // nil: the template's config applies
	}{
		{
			name:    "sms",
			tmpl:    &messaging.Template{Channel: messaging.ChannelSMS, Content: "Hi {{name}} from {{shop}}"},
			content: "Hi Ann from Herald",
		},
		{
			name: "sms ignores chat fields",
			tmpl: &messaging.Template{Channel: messaging.ChannelSMS, Content: "Hi", MessageType: 1,
				SMSFallbackEnabled: true, SMSFallbackContent: "{{name}}",
				Config: &messaging.ChatConfig{ButtonURL: "https://a.example/{{id}}"}},
			content: "Hi",
		},
		{
			name: "button url rendered for ButtonPlusText",
			tmpl: &messaging.Template{Channel: messaging.ChannelChat, MessageType: messaging.TypeButtonPlusText,
				Content: "Order {{id}}", Config: &messaging.ChatConfig{ButtonText: "Track {{id}}", ButtonURL: "https://t.example/{{id}}"}},
			content:    "Order 42",
			wantConfig: &messaging.ChatConfig{ButtonText: "Track {{id}}", ButtonURL: "https://t.example/42"},
		},
		{
			name: "button url rendered for ImagePlusText, image url never",
			tmpl: &messaging.Template{Channel: messaging.ChannelChat, MessageType: messaging.TypeImagePlusText,
				Content: "Hi", Config: &messaging.ChatConfig{ImageURL: "https://cdn.example/{{x}}.png", ButtonText: "Go",
					ButtonURL: "https://t.example/?u={{id}}"}},
			content:    "Hi",
			wantConfig: &messaging.ChatConfig{ImageURL: "https://cdn.example/{{x}}.png", ButtonText: "Go", ButtonURL: "https://t.example/?u=42"},
		},
		{
			name: "button url without placeholders: no per-message config",
			tmpl: &messaging.Template{Channel: messaging.ChannelChat, MessageType: messaging.TypeButtonPlusText,
				Content: "Hi {{name}}", Config: &messaging.ChatConfig{ButtonText: "Go", ButtonURL: "https://t.example/"}},
			content: "Hi Ann",
		},
		{
			name: "file url rendered, file name never",
			tmpl: &messaging.Template{Channel: messaging.ChannelChat, MessageType: messaging.TypeFile,
				Config: &messaging.ChatConfig{FileURL: "https://f.example/{{id}}.pdf", FileName: "{{id}}.pdf", FileType: "PDF"}},
			wantConfig: &messaging.ChatConfig{FileURL: "https://f.example/42.pdf", FileName: "{{id}}.pdf", FileType: "PDF"},
		},
		{
			name: "video button url never rendered",
			tmpl: &messaging.Template{Channel: messaging.ChannelChat, MessageType: messaging.TypeVideo,
				Config: &messaging.ChatConfig{VideoURL: "https://v.example/{{x}}.mp4", ButtonText: "Go", ButtonURL: "https://t.example/{{id}}",
					FileURL: "https://f.example/{{id}}"}},
		},
		{
			name: "carousel urls never rendered",
			tmpl: &messaging.Template{Channel: messaging.ChannelChat, MessageType: messaging.TypeCarousel, Content: "{{shop}} picks",
				Config: &messaging.ChatConfig{Items: []messaging.CarouselItem{{Title: "A", ImageURL: "https://i.example/{{x}}",
					ButtonText: "Buy", ButtonURL: "https://b.example/{{id}}"}}}},
			content: "Herald picks",
		},
		{
			name: "button url of another type's field never rendered",
			tmpl: &messaging.Template{Channel: messaging.ChannelChat, MessageType: messaging.TypeSimpleText,
				Content: "Hi", Config: &messaging.ChatConfig{ButtonURL: "https://t.example/{{id}}"}},
			content: "Hi",
		},
		{
			name: "fallback rendered when enabled",
			tmpl: &messaging.Template{Channel: messaging.ChannelChat, MessageType: messaging.TypeSimpleText, Content: "Hi {{name}}",
				SMSFallbackEnabled: true, SMSFallbackContent: "SMS: Hi {{name}} from {{shop}}"},
			content:  "Hi Ann",
			fallback: "SMS: Hi Ann from Herald",
		},
		{
			name: "fallback not rendered when disabled",
			tmpl: &messaging.Template{Channel: messaging.ChannelChat, MessageType: messaging.TypeSimpleText, Content: "Hi",
				SMSFallbackContent: "SMS {{name}}"},
			content: "Hi",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := template.CompileTemplate(tc.tmpl).Render(rec, req)
			require.NoError(t, err)
			require.Equal(t, tc.content, got.Content)
			require.Equal(t, tc.fallback, got.FallbackContent)
			require.Equal(t, tc.wantConfig, got.Config)
		})
	}
}

func TestCompiledIsIndependentOfTemplate(t *testing.T) {
	tm := &messaging.Template{Channel: messaging.ChannelChat, MessageType: messaging.TypeButtonPlusText, Content: "Hi {{name}}",
		Config: &messaging.ChatConfig{ButtonText: "Go", ButtonURL: "https://t.example/{{id}}"}}
	c := template.CompileTemplate(tm)
	tm.Content = "changed"
	tm.Config.ButtonText = "changed"
	tm.Config.ButtonURL = "https://changed.example/"

	a, err := c.Render(map[string]string{"name": "A", "id": "1"}, nil)
	require.NoError(t, err)
	b, err := c.Render(map[string]string{"name": "B", "id": "2"}, nil)
	require.NoError(t, err)
	require.Equal(t, "Hi A", a.Content)
	require.Equal(t, "https://t.example/1", a.Config.ButtonURL)
	require.Equal(t, "Go", a.Config.ButtonText)
	require.Equal(t, "https://t.example/2", b.Config.ButtonURL)
	require.NotSame(t, a.Config, b.Config)
}

func TestCompiledHasPlaceholders(t *testing.T) {
	chat := func(content, url, fallback string) *messaging.Template {
		return &messaging.Template{Channel: messaging.ChannelChat, MessageType: messaging.TypeButtonPlusText, Content: content,
			Config:             &messaging.ChatConfig{ButtonText: "Go", ButtonURL: url},
			SMSFallbackEnabled: fallback != "", SMSFallbackContent: fallback}
	}
	require.False(t, template.CompileTemplate(chat("Hi", "https://a.example/", "")).HasPlaceholders())
	require.True(t, template.CompileTemplate(chat("Hi {{n}}", "https://a.example/", "")).HasPlaceholders())
	require.True(t, template.CompileTemplate(chat("Hi", "https://a.example/{{n}}", "")).HasPlaceholders())
	require.True(t, template.CompileTemplate(chat("Hi", "https://a.example/", "{{n}}")).HasPlaceholders())
	require.False(t, template.CompileTemplate(chat("Hi", "https://a.example/", "plain")).HasPlaceholders())
}
