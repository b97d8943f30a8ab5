package template_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/template"
)

func TestRender(t *testing.T) {
	rec := map[string]string{"name": "Ann", "code": "R-1", "empty": "", "Name": "ANN"}
	req := map[string]string{"name": "Customer", "shop": "Herald Store", "code": "Q-9"}
	cases := []struct {
		name, text, want string
		rec, req         map[string]string
	}{
		{"recipient value first", "Hi {{name}}", "Hi Ann", rec, req},
		{"request value as fallback per name", "{{name}} at {{shop}}", "Ann at Herald Store", rec, req},
		{"request value when recipient has none", "Hi {{name}}", "Hi Customer", nil, req},
		{"unknown name stays", "Hi {{name}}, {{unknown}}!", "Hi Ann, {{unknown}}!", rec, req},
		{"no values at all", "Hi {{name}}", "Hi {{name}}", nil, nil},
		{"case-sensitive", "{{Name}} {{NAME}}", "ANN {{NAME}}", rec, nil},
		{"empty value renders empty", "[{{empty}}]", "[]", rec, req},
		{"adjacent placeholders", "{{name}}{{code}}{{shop}}", "AnnR-1Herald Store", rec, req},
		{"repeated placeholder", "{{code}}/{{code}}", "R-1/R-1", rec, nil},
		{"spaces inside are text", "Hi {{ name }}", "Hi {{ name }}", rec, req},
		{"hyphen is text", "Hi {{first-name}}", "Hi {{first-name}}", map[string]string{"first-name": "X"}, nil},
		{"empty braces are text", "{{}}", "{{}}", rec, nil},
		{"unclosed", "Hi {{name", "Hi {{name", rec, nil},
		{"single close", "Hi {{name}", "Hi {{name}", rec, nil},
		{"triple braces", "{{{name}}}", "{Ann}", rec, nil},
		{"digits and underscore", "{{a_1}}", "ok", map[string]string{"a_1": "ok"}, nil},
		{"unicode name is text", "{{имя}}", "{{имя}}", map[string]string{"имя": "x"}, nil},
		{"value with braces is not re-rendered", "{{a}}", "{{name}}", map[string]string{"a": "{{name}}", "name": "no"}, nil},
		{"unicode around", "Салом, {{name}}! 😀", "Салом, Ann! 😀", rec, nil},
		{"no placeholders", "plain text", "plain text", rec, req},
		{"empty text", "", "", rec, req},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := template.Compile(tc.text)
			require.Equal(t, tc.want, c.Render(tc.rec, tc.req))
			require.Equal(t, tc.want, template.Render(tc.text, tc.rec, tc.req))
			require.Equal(t, tc.want, string(c.AppendRender([]byte("x"), tc.rec, tc.req))[1:])
			require.Equal(t, tc.text, c.String())
		})
	}
}

func TestHasPlaceholders(t *testing.T) {
	cases := []struct {
		text string
		want bool
	}{
		{"", false},
		{"plain", false},
		{"{{a}}", true},
		{"x {{first_name}} y", true},
		{"{{ a }}", false},
		{"{{a-b}}", false},
		{"{{}}", false},
		{"{{a}", false},
		{"{a}}", false},
		{"{{ x }} then {{y}}", true},
		{"{{{{z}}", true},
		{"https://shop.example.com/{{id}}", true},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, template.HasPlaceholders(tc.text), "%q", tc.text)
		require.Equal(t, tc.want, template.Compile(tc.text).HasPlaceholders(), "%q compiled", tc.text)
	}
}

func TestNames(t *testing.T) {
	require.Equal(t, []string{"b", "a", "C"}, template.Compile("{{b}} {{a}} {{b}} {{ d }} {{C}}").Names())
	require.Empty(t, template.Compile("none").Names())
}

func TestRenderURL(t *testing.T) {
	u := template.Compile("https://shop.example.com/o/{{id}}?q={{q}}&x={{missing}}")
	got := u.RenderURL(map[string]string{"id": "a b/ü", "q": `x"<>{|}\^` + "`%&=?"}, nil)
	require.Equal(t, "https://shop.example.com/o/a%20b/%C3%BC?q=x%22%3C%3E%7B%7C%7D%5C%5E%60%&=?&x={{missing}}", got)
	require.Equal(t, "https://a.example/", template.Compile("https://a.example/").RenderURL(nil, nil))
}

func TestRenderAllocations(t *testing.T) {
	rec := map[string]string{"name": "Ann", "code": "123456"}
	plain := template.Compile("Your order has shipped.")
	require.Zero(t, testing.AllocsPerRun(100, func() { _ = plain.Render(rec, nil) }))

	c := template.Compile("Hi {{name}}, your code is {{code}}. {{a}}{{b}}{{c}}{{d}}{{e}}{{f}}{{g}}")
	require.LessOrEqual(t, testing.AllocsPerRun(100, func() { _ = c.Render(rec, nil) }), 1.0)

	// Past the values kept on the stack, rendering still allocates once.
	many := template.Compile(strings.Repeat("{{name}}-{{missing}} ", 20))
	require.LessOrEqual(t, testing.AllocsPerRun(100, func() { _ = many.Render(rec, nil) }), 1.0)
	require.Equal(t, strings.Repeat("Ann-{{missing}} ", 20), many.Render(rec, nil))
	require.Equal(t, strings.Repeat("Ann-{{missing}} ", 20), many.RenderURL(rec, nil))

	buf := make([]byte, 0, 256)
	require.Zero(t, testing.AllocsPerRun(100, func() { buf = c.AppendRender(buf[:0], rec, nil) }))
}

func TestRenderConcurrent(t *testing.T) {
	c := template.Compile("Hi {{name}}")
	done := make(chan string, 8)
	for i := range 8 {
		go func() { done <- c.Render(map[string]string{"name": fmt.Sprint(i)}, nil) }()
	}
	seen := map[string]bool{}
	for range 8 {
		seen[<-done] = true
	}
	require.Len(t, seen, 8)
}

// BenchmarkRender renders one SMS-sized text with four placeholders, as
// for each of a campaign's recipients.
func BenchmarkRender(b *testing.B) {
	c := template.Compile("Dear {{name}}, your order {{orderId}} ships on {{date}}. Track it at https://t.example.com/{{orderId}} - Herald Store")
	req := map[string]string{"date": "12 May"}
	recs := make([]map[string]string, 1000)
	for i := range recs {
		recs[i] = map[string]string{"name": fmt.Sprintf("Customer %d", i), "orderId": fmt.Sprintf("A%07d", i)}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		_ = c.Render(recs[i%len(recs)], req)
	}
}

// BenchmarkRender200k renders the text for 200,000 recipients per
// iteration: the size of the largest request.
func BenchmarkRender200k(b *testing.B) {
	c := template.Compile("Dear {{name}}, your order {{orderId}} ships on {{date}}.")
	req := map[string]string{"date": "12 May"}
	recs := make([]map[string]string, 200_000)
	for i := range recs {
		recs[i] = map[string]string{"name": "Customer " + strings.Repeat("x", i%7), "orderId": fmt.Sprint(i)}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, r := range recs {
			_ = c.Render(r, req)
		}
	}
}

func ExampleText_Render() {
	text := template.Compile("Hi {{name}}, your code is {{code}}. {{ note }} {{unknown}}")
	request := map[string]string{"name": "customer", "code": "0000"}
	for _, recipient := range []map[string]string{
		{"name": "Ann", "code": "4711"},
		{"code": "1234"},
	} {
		fmt.Println(text.Render(recipient, request))
	}
	// Output:
	// Hi Ann, your code is 4711. {{ note }} {{unknown}}
	// Hi customer, your code is 1234. {{ note }} {{unknown}}
}
