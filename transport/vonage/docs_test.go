package vonage_test

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/transport/vonage"
)

// TestDocsErrorTable keeps the error table of docs/providers/vonage.md
// the same as ErrorCodes: each code, its reason and its Herald code.
func TestDocsErrorTable(t *testing.T) {
	doc, err := os.ReadFile("../../docs/providers/vonage.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| (1[0-9]{3}) \\| [^|]+ \\| ([^|]+) \\| ([^|]+) \\|$")
	rows := map[int][2]string{}
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		n, _ := strconv.Atoi(m[1])
		rows[n] = [2]string{m[2], m[3]}
	}
	codes := vonage.ErrorCodes()
	if len(rows) != len(codes) {
		t.Errorf("the docs list %d codes, ErrorCodes %d", len(rows), len(codes))
	}
	for _, c := range codes {
		r, ok := rows[c.Code]
		if !ok {
			t.Errorf("code %d is not in the docs", c.Code)
			continue
		}
		if c.Reason == "" {
			if r[0] != "accepted (already sent)" {
				t.Errorf("code %d: docs say %q, want accepted (already sent)", c.Code, r[0])
			}
			continue
		}
		if r[0] != "`"+string(c.Reason)+"`" {
			t.Errorf("code %d: docs say reason %s, code table %s", c.Code, r[0], c.Reason)
		}
		cc := delivery.ChatCodes()[c.Reason]
		want := cc.Name
		if cc.Code != 0 {
			want += " (" + strconv.Itoa(cc.Code) + ")"
		}
		if len(r[1]) < len(want) || r[1][:len(want)] != want {
			t.Errorf("code %d: docs say %q, want it to start with %q", c.Code, r[1], want)
		}
	}
}
