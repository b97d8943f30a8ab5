package metawhatsapp

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/heraldhq/herald/delivery"
)

// TestDocsErrorTable keeps the error table of
// docs/providers/meta-whatsapp.md equal to Codes.
func TestDocsErrorTable(t *testing.T) {
	b, err := os.ReadFile("../../docs/providers/meta-whatsapp.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| ([0-9]+) \\| ([^|]+) \\| `([a-z_]+)` \\| ([0-9]+) ([A-Z_]+) \\|$")
	seen := map[int]bool{}
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		code, _ := strconv.Atoi(m[1])
		c, ok := Codes()[code]
		if !ok {
			t.Errorf("the docs name code %d, which Codes lacks", code)
			continue
		}
		hc := delivery.ChatCodes()[c.Reason]
		want := fmt.Sprintf("%s|%s|%d|%s", c.Title, c.Reason, hc.Code, hc.Name)
		if got := m[2] + "|" + m[3] + "|" + m[4] + "|" + m[5]; got != want {
			t.Errorf("code %d: the docs say %s, the code %s", code, got, want)
		}
		seen[code] = true
	}
	for code := range Codes() {
		if !seen[code] {
			t.Errorf("code %d is missing from the docs' table", code)
		}
	}
}
