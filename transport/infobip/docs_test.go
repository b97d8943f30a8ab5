package infobip_test

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/transport/infobip"
)

// TestDocsTables keeps the error mapping of docs/providers/infobip.md
// equal to the code's tables.
func TestDocsTables(t *testing.T) {
	doc, err := os.ReadFile("../../docs/providers/infobip.md")
	require.NoError(t, err)

	statusRow := regexp.MustCompile("(?m)^\\| (\\d+) \\| `([A-Z_]+)` \\| `([a-z_]+)` \\| `([A-Z_]+)(?: \\((\\d+)\\))?`")
	var docStatuses []infobip.StatusCode
	for _, m := range statusRow.FindAllStringSubmatch(string(doc), -1) {
		id, _ := strconv.Atoi(m[1])
		reason := delivery.ChatReason(m[3])
		docStatuses = append(docStatuses, infobip.StatusCode{ID: id, Name: m[2], Reason: reason})
		code := delivery.ChatCodes()[reason]
		require.Equal(t, code.Name, m[4], "Herald code of %s", m[2])
		if code.Code != 0 {
			require.Equal(t, strconv.Itoa(code.Code), m[5], "Herald code of %s", m[2])
		}
	}
	require.Equal(t, infobip.StatusCodes(), docStatuses)

	wordRow := regexp.MustCompile("(?m)^\\| `([A-Z_]+)` \\| `([a-z_]+)` \\| `([A-Z_]+) \\((\\d+)\\)`")
	var docWords []infobip.ErrorWord
	for _, m := range wordRow.FindAllStringSubmatch(string(doc), -1) {
		docWords = append(docWords, infobip.ErrorWord{Word: m[1], Reason: delivery.ChatReason(m[2])})
		require.Equal(t, delivery.ChatCodes()[delivery.ChatReason(m[2])].Name, m[3])
	}
	require.Equal(t, infobip.ErrorWords(), docWords)
}
