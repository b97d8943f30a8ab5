package template_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/template"
)

// TestTextLenAgreesWithRender: the lengths computed without rendering are
// the lengths of the renderings.
func TestTextLenAgreesWithRender(t *testing.T) {
	rec := map[string]string{"name": "Ann", "emoji": "😀😀", "empty": "", "url": "a b/é?x={y}"}
	req := map[string]string{"name": "Customer", "shop": "Herald Store", "big": strings.Repeat("é", 1000)}
	texts := []string{
		"", "plain", "Hi {{name}}", "{{name}}{{name}}{{name}}", "{{missing}} stays", "{{empty}}|{{empty}}",
		"Салом, {{name}}! {{emoji}} at {{shop}}", "{{big}} {{big}}", "{{ name }} {{first-name}} {{}} {{{name}}}",
		"https://x.example/{{url}}?q={{name}}&r={{nothere}}", strings.Repeat("{{x}}", 320),
	}
	for _, text := range texts {
		c := template.Compile(text)
		for _, vals := range []struct{ rec, req map[string]string }{{nil, nil}, {rec, nil}, {nil, req}, {rec, req}} {
			require.Equal(t, utf8.RuneCountInString(c.Render(vals.rec, vals.req)), c.Len(vals.rec, vals.req), "text %q", text)
			require.Equal(t, len(c.RenderURL(vals.rec, vals.req)), c.URLLen(vals.rec, vals.req), "text %q", text)
		}
	}
}

func TestTextLenDoesNotAllocate(t *testing.T) {
	c := template.Compile(strings.Repeat("Hi {{name}} {{x}} ", 50))
	v := map[string]string{"name": "Ann", "x": strings.Repeat("é", 1<<20)}
	require.Zero(t, testing.AllocsPerRun(20, func() { _ = c.Len(v, nil); _ = c.URLLen(nil, v) }))
	require.Equal(t, 50*(len("Hi   ")+len("Ann")+1<<20), c.Len(v, nil))
}

func chatWith(mt messaging.MessageType, content string, cfg *messaging.ChatConfig) *messaging.Template {
	return &messaging.Template{Channel: messaging.ChannelChat, MessageType: mt, Content: content, Config: cfg}
}

// TestRenderedLimits: a message whose rendering would exceed a field's
// limit is refused, exactly at the limit, with the field and the value
// at fault; one within every limit renders, and its fields have the
// lengths that were computed.
func TestRenderedLimits(t *testing.T) {
	x := func(n int) string { return strings.Repeat("é", n) } // 2 bytes, 1 character
	sms := func(content string) *messaging.Template {
		return &messaging.Template{Channel: messaging.ChannelSMS, Content: content}
	}
	fallback := func(fb string) *messaging.Template {
		t := chatWith(messaging.TypeSimpleText, "Hi", nil)
		t.SMSFallbackEnabled, t.SMSFallbackContent = true, fb
		return t
	}
	button := chatWith(messaging.TypeButtonPlusText, "Hi", &messaging.ChatConfig{ButtonText: "Go", ButtonURL: "https://a.example/{{p}}"})
	file := chatWith(messaging.TypeFile, "", &messaging.ChatConfig{FileURL: "https://f.example/{{p}}.pdf", FileName: "f", FileType: "PDF"})
	cases := []struct {
		name      string
		tmpl      *messaging.Template
		rec, req  map[string]string
		field     string // "" when it fits
		culprit   string
		fromReq   bool
		maxLength int
	}{
		{"320 x {{x}} with 5 characters fits", sms(strings.Repeat("{{x}}", 320)), map[string]string{"x": x(5)}, nil, "", "", false, 1600},
		{"320 x {{x}} with 6 characters", sms(strings.Repeat("{{x}}", 320)), map[string]string{"x": x(6)}, nil, "templateContent", "x", false, 1600},
		{"320 x {{x}} with 100 characters", sms(strings.Repeat("{{x}}", 320)), map[string]string{"x": x(100)}, nil, "templateContent", "x", false, 1600},
		{"request value at fault", sms("{{a}} {{b}}"), map[string]string{"a": "Ann"}, map[string]string{"b": x(1600)}, "templateContent", "b", true, 1600},
		{"recipient overrides the request value", sms("{{a}} {{b}}"), map[string]string{"b": "short"}, map[string]string{"b": x(1600)}, "", "", false, 1600},
		{"sms exactly 1600", sms("ab{{a}}"), map[string]string{"a": x(1598)}, nil, "", "", false, 1600},
		{"sms 1601", sms("ab{{a}}"), map[string]string{"a": x(1599)}, nil, "templateContent", "a", false, 1600},
		{"placeholder left as written counts", sms(x(1590) + "{{unknown}}"), nil, nil, "templateContent", "", false, 1600},
		{"largest contribution is named", sms("{{a}}{{b}}{{b}}"), map[string]string{"a": x(700), "b": x(500)}, nil, "templateContent", "b", false, 1600},
		{"chat 1000", chatWith(messaging.TypeSimpleText, "{{a}}", nil), map[string]string{"a": x(1000)}, nil, "", "", false, 1000},
		{"chat 1001", chatWith(messaging.TypeSimpleText, "{{a}}", nil), map[string]string{"a": x(1001)}, nil, "templateContent", "a", false, 1000},
		{"survey 85", chatWith(messaging.TypeSurvey, "Q {{a}}?", &messaging.ChatConfig{Options: options(2)}), map[string]string{"a": x(82)}, nil, "", "", false, 85},
		{"survey 86", chatWith(messaging.TypeSurvey, "Q {{a}}?", &messaging.ChatConfig{Options: options(2)}), map[string]string{"a": x(83)}, nil, "templateContent", "a", false, 85},
		{"fallback 1600", fallback("{{a}}"), map[string]string{"a": x(1600)}, nil, "", "", false, 1600},
		{"fallback 1601", fallback("{{a}}"), map[string]string{"a": x(1601)}, nil, "smsFallbackTemplateContent", "a", false, 1600},
		{"button url bytes, escaped", button, map[string]string{"p": strings.Repeat(" ", 676)}, nil, "", "", false, 2048},
		{"button url 2049 bytes", button, map[string]string{"p": strings.Repeat(" ", 677)}, nil, "typeSpecificConfig.buttonUrl", "p", false, 2048},
		{"button url counts bytes", button, map[string]string{"p": x(1015)}, nil, "typeSpecificConfig.buttonUrl", "p", false, 2048},
		{"file url 2049 bytes", file, nil, map[string]string{"p": strings.Repeat("a", 2049-len("https://f.example/.pdf"))}, "typeSpecificConfig.fileUrl", "p", true, 2048},
		{"1 MB value", sms(strings.Repeat("{{x}}", 320)), map[string]string{"x": x(1 << 20)}, nil, "templateContent", "x", false, 1600},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := template.CompileTemplate(tc.tmpl)
			b := c.Bind(tc.req)
			r, err := c.Render(tc.rec, tc.req)
			require.Equal(t, tc.field == "", b.Fits(tc.rec))
			if tc.field == "" {
				require.NoError(t, err)
				require.NoError(t, b.Check(tc.rec))
				r2, err := b.Render(tc.rec)
				require.NoError(t, err)
				require.Equal(t, r, r2)
				require.LessOrEqual(t, utf8.RuneCountInString(r.Content), max(tc.maxLength, 1000))
				require.LessOrEqual(t, utf8.RuneCountInString(r.FallbackContent), 1600)
				if r.Config != nil {
					require.LessOrEqual(t, len(r.Config.ButtonURL), 2048)
					require.LessOrEqual(t, len(r.Config.FileURL), 2048)
				}
				return
			}
			require.Equal(t, template.Rendered{}, r, "nothing rendered")
			var e *template.TooLongError
			require.True(t, errors.As(err, &e), "got %v", err)
			require.Equal(t, tc.field, e.Field)
			require.Equal(t, tc.culprit, e.Placeholder)
			require.Equal(t, tc.fromReq, e.FromRequest)
			require.Equal(t, tc.maxLength, e.Max)
			require.Greater(t, e.Length, e.Max)
			require.Equal(t, err, b.Check(tc.rec))
			_, err = b.Render(tc.rec)
			require.Equal(t, e, err)
		})
	}
}

// TestBoundAgreesWithRendering compares the fit decision with the real
// rendering for recipients around the limit, with values from the
// recipient, the request or both.
func TestBoundAgreesWithRendering(t *testing.T) {
	tm := &messaging.Template{Channel: messaging.ChannelChat, MessageType: messaging.TypeButtonPlusText,
		Content:            "Dear {{name}}, your code is {{code}} {{code}} ({{shop}}) {{none}}",
		Config:             &messaging.ChatConfig{ButtonText: "Go", ButtonURL: "https://t.example/{{code}}/{{name}}"},
		SMSFallbackEnabled: true, SMSFallbackContent: "{{name}}: {{code}}"}
	c := template.CompileTemplate(tm)
	req := map[string]string{"shop": "Herald é", "code": "R1"}
	b := c.Bind(req)
	for n := 0; n <= 1100; n += 7 {
		for _, rec := range []map[string]string{
			{"name": strings.Repeat("a", n)},
			{"name": strings.Repeat("é ", n/2), "code": strings.Repeat("1", n/3)},
			{"code": strings.Repeat("😀", n/2), "unused": "x"},
			{"shop": strings.Repeat("s", n)},
		} {
			merged := map[string]string{}
			for k, v := range req {
				merged[k] = v
			}
			for k, v := range rec {
				merged[k] = v
			}
			content := template.Render(tm.Content, merged, nil)
			fb := template.Render(tm.SMSFallbackContent, merged, nil)
			u := template.Compile(tm.Config.ButtonURL).RenderURL(merged, nil)
			want := utf8.RuneCountInString(content) <= 1000 && utf8.RuneCountInString(fb) <= 1600 && len(u) <= 2048
			require.Equal(t, want, b.Fits(rec), "n=%d rec=%v", n, len(rec))
			r, err := b.Render(rec)
			if want {
				require.NoError(t, err)
				require.Equal(t, content, r.Content)
				require.Equal(t, fb, r.FallbackContent)
				require.Equal(t, u, r.Config.ButtonURL)
			} else {
				require.Error(t, err)
			}
		}
	}
}

// TestHostileValuesCostNoAllocation: a 1 MB value used 320 times, from
// the recipient or the request, is refused without allocating, and
// measuring it reads a bounded part of it (Fits costs the same on a 1 MB
// value as on a 2 KB one: both are clamped at the limit).
func TestHostileValuesCostNoAllocation(t *testing.T) {
	c := template.CompileTemplate(&messaging.Template{Channel: messaging.ChannelSMS, Content: strings.Repeat("{{x}}", 320)})
	huge := map[string]string{"x": strings.Repeat("é", 1<<19)} // 1 MB
	b := c.Bind(huge)
	require.False(t, b.Fits(nil))
	require.False(t, c.Bind(nil).Fits(huge))
	require.Zero(t, testing.AllocsPerRun(100, func() {
		if b.Fits(nil) || b.Fits(huge) {
			panic("fits")
		}
	}))
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := b.Render(nil); err == nil {
			panic("rendered")
		}
	})
	require.LessOrEqual(t, allocs, 1.0, "the error only")
}

// BenchmarkHostileRender measures refusing a 1 MB value used 320 times
// (a 320 MB message if rendered): B/op stays at the size of the error.
func BenchmarkHostileRender(b *testing.B) {
	c := template.CompileTemplate(&messaging.Template{Channel: messaging.ChannelSMS, Content: strings.Repeat("{{x}}", 320)})
	huge := map[string]string{"x": strings.Repeat("a", 1<<20)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Render(huge, nil); err == nil {
			b.Fatal("rendered")
		}
	}
}

// BenchmarkBoundRender is BenchmarkRender through a Bound, as a bulk
// preparation renders: the length check before each rendering.
func BenchmarkBoundRender(b *testing.B) {
	c := template.CompileTemplate(&messaging.Template{Channel: messaging.ChannelSMS,
		Content: "Dear {{name}}, your order {{orderId}} ships on {{date}}. Track it at https://t.example.com/{{orderId}} - Herald Store"})
	bound := c.Bind(map[string]string{"date": "12 May"})
	recs := make([]map[string]string, 1000)
	for i := range recs {
		recs[i] = map[string]string{"name": "Customer " + strings.Repeat("x", i%7), "orderId": strings.Repeat("7", 8)}
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := bound.Render(recs[i%len(recs)]); err != nil {
			b.Fatal(err)
		}
	}
}
