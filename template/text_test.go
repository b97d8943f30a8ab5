package template_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/template"
)

func TestCheckChars(t *testing.T) {
	cases := []struct {
		name, s string
		want    string // part of the error; "" when s is accepted
	}{
		{"empty", "", ""},
		{"plain", "Hello, world", ""},
		{"tab, line feed, carriage return", "a\tb\nc\r\nd", ""},
		{"non-ASCII", "Салом 😀 €", ""},
		{"DEL is not a C0 control", "a\x7fb", ""},
		{"NUL", "a\x00b", "U+0000 (character 2)"},
		{"NUL alone", "\x00", "U+0000 (character 1)"},
		{"unit separator", "\x1f", "U+001F"},
		{"form feed", "a\fb", "U+000C"},
		{"escape", "\x1b[0m", "U+001B"},
		{"vertical tab", "\v", "U+000B"},
		{"position counts characters", "éé\x01", "U+0001 (character 3)"},
		{"invalid UTF-8", "ab\xffcd", "valid UTF-8 (invalid byte 0xFF at byte 2)"},
		{"truncated sequence", "€"[:2], "valid UTF-8"},
		{"surrogate half", "\xed\xa0\x80", "valid UTF-8"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := template.CheckChars(tc.s)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestCheckCharsDoesNotAllocate(t *testing.T) {
	s := strings.Repeat("Hello {{name}}, é😀\n", 100)
	require.Zero(t, testing.AllocsPerRun(100, func() { _ = template.CheckChars(s) }))
}

// TestValidateRefusesControlCharacters puts a NUL (and invalid UTF-8) into
// every text field of every kind of template, one at a time, and expects
// an error on that field alone.
func TestValidateRefusesControlCharacters(t *testing.T) {
	const cfg = "typeSpecificConfig."
	type field struct {
		path string
		set  func(t *messaging.Template, bad string)
	}
	common := []field{
		{"name", func(t *messaging.Template, b string) { t.Name = "n" + b }},
		{"description", func(t *messaging.Template, b string) { t.Description = b }},
		{"templateContent", func(t *messaging.Template, b string) { t.Content += b }},
	}
	fallback := field{"smsFallbackTemplateContent", func(t *messaging.Template, b string) {
		t.SMSFallbackEnabled, t.SMSFallbackSenderID, t.SMSFallbackContent = true, 2, "Hi {{name}}"+b
	}}
	conf := func(name string, set func(c *messaging.ChatConfig, b string)) field {
		return field{cfg + name, func(t *messaging.Template, b string) { set(t.Config, b) }}
	}
	url := func(name string, set func(c *messaging.ChatConfig, b string)) field {
		return conf(name, func(c *messaging.ChatConfig, b string) { set(c, "https://example.com/"+b) })
	}
	perType := map[messaging.MessageType][]field{
		messaging.TypeSimpleText: {fallback},
		messaging.TypeImageOnly:  {url("imageUrl", func(c *messaging.ChatConfig, b string) { c.ImageURL = b })},
		messaging.TypeButtonPlusText: {
			conf("buttonText", func(c *messaging.ChatConfig, b string) { c.ButtonText += b }),
			url("buttonUrl", func(c *messaging.ChatConfig, b string) { c.ButtonURL = b }),
			// fields of other types are not validated, but stored
			conf("fileName", func(c *messaging.ChatConfig, b string) { c.FileName = b }),
			url("videoUrl", func(c *messaging.ChatConfig, b string) { c.VideoURL = b }),
		},
		messaging.TypeImagePlusText: {conf("buttonText", func(c *messaging.ChatConfig, b string) { c.ButtonText += b })},
		messaging.TypeCarousel: {
			conf("items[1].title", func(c *messaging.ChatConfig, b string) { c.Items[1].Title += b }),
			conf("items[0].buttonText", func(c *messaging.ChatConfig, b string) { c.Items[0].ButtonText += b }),
			conf("items[2].secondaryButtonText", func(c *messaging.ChatConfig, b string) {
				c.Items[2].SecondaryButtonText, c.Items[2].SecondaryButtonURL = "More"+b, "https://example.com/"
			}),
			url("items[0].imageUrl", func(c *messaging.ChatConfig, b string) { c.Items[0].ImageURL = b }),
		},
		messaging.TypeSurvey: {
			conf("options[0].optionText", func(c *messaging.ChatConfig, b string) { c.Options[0].OptionText += b }),
			conf("options[1].optionValue", func(c *messaging.ChatConfig, b string) { c.Options[1].OptionValue += b }),
			conf("options[1].optionText", func(c *messaging.ChatConfig, b string) { c.Options[1].OptionText = b }),
		},
		messaging.TypeVideo: {
			url("thumbnailUrl", func(c *messaging.ChatConfig, b string) { c.ThumbnailURL = b }),
			conf("buttonText", func(c *messaging.ChatConfig, b string) { c.ButtonText, c.ButtonURL = "Go"+b, "https://example.com/" }),
		},
		messaging.TypeFile: {
			conf("fileName", func(c *messaging.ChatConfig, b string) { c.FileName += b }),
			conf("fileType", func(c *messaging.ChatConfig, b string) { c.FileType += b }),
			url("fileUrl", func(c *messaging.ChatConfig, b string) { c.FileURL = b }),
		},
	}
	bads := map[string]string{"NUL": "\x00", "escape": "\x1b", "invalid UTF-8": "\xc3("}
	run := func(t *testing.T, kind string, base func() *messaging.Template, f field) {
		for bname, bad := range bads {
			t.Run(kind+"/"+f.path+"/"+bname, func(t *testing.T) {
				tm := base()
				require.NoError(t, template.Validate(tm), "the base template is valid")
				f.set(tm, bad)
				fe := template.Check(tm)
				require.Len(t, fe, 1, "fields: %v", fe)
				require.Contains(t, fe, f.path, "fields: %v", fe)
			})
		}
	}
	for _, f := range common {
		run(t, "sms", smsTemplate, f)
	}
	for mt := messaging.TypeSimpleText; mt <= messaging.TypeFile; mt++ {
		base := func() *messaging.Template { return chatTemplate(mt) }
		for _, f := range append(common, perType[mt]...) {
			run(t, "chat type "+strconv.Itoa(int(mt)), base, f)
		}
	}
	// What the rule lets through.
	tm := smsTemplate()
	tm.Content, tm.Description = "Line one\r\nline two\tand\u00a0more", "a\nb"
	require.NoError(t, template.Validate(tm))
}
