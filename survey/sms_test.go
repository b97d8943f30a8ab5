package survey_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/survey"
)

func TestMatchOption(t *testing.T) {
	options := []messaging.SurveyOption{{OptionText: "Great", OptionValue: "great"}, {OptionText: "Fine", OptionValue: "ok"}, {OptionText: "Poor"}}
	for text, want := range map[string]int{
		"GREAT": 0, " great. ": 0, "fine": 1, "OK": 1, "ok!": 1, "poor": 2, "1": 0, "3": 2, " 2 ": 1,
	} {
		got, ok := survey.MatchOption(text, options)
		require.True(t, ok, "%q", text)
		require.Equal(t, want, got, "%q", text)
	}
	for _, text := range []string{"", "0", "4", "-1", "great fine", "very poor", "?", "1.5"} {
		_, ok := survey.MatchOption(text, options)
		require.False(t, ok, "%q", text)
	}
}
