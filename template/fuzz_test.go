package template_test

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/template"
)

// FuzzSegment checks the SMS segmenter on any text: the parts reassemble
// to the text, each fits its segment (160 septets or 70 UTF-16 units
// alone, 153 or 67 as a part of several), no GSM-7 escape pair or UTF-16
// surrogate pair is cut, and the counts agree with CountSegments. Seeds
// are in testdata/fuzz/FuzzSegment.
func FuzzSegment(f *testing.F) {
	f.Add("")
	f.Add(strings.Repeat("a", 161))
	f.Add(strings.Repeat("€", 80))
	f.Add(strings.Repeat("😀", 36))
	f.Fuzz(func(t *testing.T, text string) {
		seg := template.Segment(text)
		require.Equal(t, text, strings.Join(seg.Parts, ""), "parts reassemble to the text")
		require.Equal(t, len(seg.Parts), seg.Segments)
		enc, n := template.CountSegments(text)
		require.Equal(t, seg.Encoding, enc)
		require.Equal(t, seg.Segments, n)
		require.Equal(t, template.IsGSM7(text), seg.Encoding == template.EncodingGSM7)

		single, perPart := template.GSM7SingleSeptets, template.GSM7PartSeptets
		if seg.Encoding == template.EncodingUCS2 {
			single, perPart = template.UCS2SingleUnits, template.UCS2PartUnits
		}
		limit := perPart
		if seg.Segments == 1 {
			limit = single
		}
		total := 0
		for i, p := range seg.Parts {
			var units int
			if seg.Encoding == template.EncodingGSM7 {
				septets, err := template.EncodeGSM7(p)
				require.NoError(t, err)
				units = len(septets)
				if len(septets) > 0 {
					require.NotEqual(t, byte(0x1B), septets[len(septets)-1], "part %d ends inside an escape pair", i)
				}
				back, err := template.DecodeGSM7(septets)
				require.NoError(t, err)
				require.Equal(t, p, back)
			} else {
				b := template.EncodeUCS2(p)
				units = len(b) / 2
				if units > 0 {
					last := uint16(b[len(b)-2])<<8 | uint16(b[len(b)-1])
					require.False(t, last >= 0xD800 && last <= 0xDBFF, "part %d ends inside a surrogate pair", i)
				}
			}
			require.LessOrEqual(t, units, limit, "part %d of %d", i, seg.Segments)
			if seg.Segments > 1 {
				require.NotEmpty(t, p, "part %d of %d is empty", i, seg.Segments)
			}
			total += units
		}
		require.Equal(t, seg.Units, total)
		require.Equal(t, seg.Segments > 1, seg.Units > single)
	})
}

// placeholderRE is an independent statement of the placeholder syntax.
var placeholderRE = regexp.MustCompile(`\{\{([A-Za-z0-9_]+)\}\}`)

// FuzzPlaceholders checks the placeholder parser and renderer on any text
// and values: rendering with every name set to "" removes exactly the
// placeholders, the names are those of the syntax, and the lengths
// computed without rendering (Text.Len, Text.URLLen, Bound.Fits) agree
// with the rendering. Seeds are in testdata/fuzz/FuzzPlaceholders.
func FuzzPlaceholders(f *testing.F) {
	f.Add("Hi {{name}}, {{ x }} {{{a}}} {{}}", "name", "Ann", "a", "€", "x")
	f.Add(strings.Repeat("{{x}}", 320), "x", "abcde", "y", "", "x")
	f.Fuzz(func(t *testing.T, text, k1, v1, k2, v2, reqValue string) {
		c := template.Compile(text)
		require.Equal(t, text, c.String())
		require.Equal(t, text, c.Render(nil, nil), "no values: the text as written")

		var names []string
		for _, m := range placeholderRE.FindAllStringSubmatch(text, -1) {
			if !contains(names, m[1]) {
				names = append(names, m[1])
			}
		}
		require.Equal(t, names, c.Names())
		require.Equal(t, len(names) > 0, c.HasPlaceholders())
		require.Equal(t, len(names) > 0, template.HasPlaceholders(text))

		empty := map[string]string{}
		for _, n := range names {
			empty[n] = ""
		}
		require.Equal(t, placeholderRE.ReplaceAllString(text, ""), c.Render(empty, nil), "empty values remove exactly the placeholders")

		rec := map[string]string{k1: v1, k2: v2}
		req := map[string]string{}
		for _, n := range names {
			req[n] = reqValue
		}
		cp := template.CompileTemplate(&messaging.Template{Channel: messaging.ChannelSMS, Content: text})
		valid := utf8.ValidString(text) && utf8.ValidString(v1) && utf8.ValidString(v2) && utf8.ValidString(reqValue)
		for _, vals := range []struct{ rec, req map[string]string }{{rec, nil}, {nil, req}, {rec, req}} {
			got := c.Render(vals.rec, vals.req)
			require.Equal(t, string(c.AppendRender(nil, vals.rec, vals.req)), got)
			n := utf8.RuneCountInString(got)
			if valid {
				require.Equal(t, n, c.Len(vals.rec, vals.req))
			} else {
				require.GreaterOrEqual(t, c.Len(vals.rec, vals.req), n)
			}
			require.Equal(t, len(c.RenderURL(vals.rec, vals.req)), c.URLLen(vals.rec, vals.req))

			r, err := cp.Render(vals.rec, vals.req)
			fits := cp.Bind(vals.req).Fits(vals.rec)
			require.Equal(t, fits, err == nil)
			if valid {
				require.Equal(t, n <= template.MaxSMSContentLen, fits, "length %d", n)
			}
			if fits {
				require.Equal(t, got, r.Content)
			}
		}
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
