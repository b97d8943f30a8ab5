package survey_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/survey"
)

func TestAggregate(t *testing.T) {
	yesNo := []messaging.SurveyOption{{OptionText: "Yes", OptionValue: "y"}, {OptionText: "No", OptionValue: "n"}}
	three := append(yesNo, messaging.SurveyOption{OptionText: "Maybe", OptionValue: "m"})
	tests := []struct {
		name     string
		options  []messaging.SurveyOption
		counts   map[int]int
		sent     int
		total    int
		rate     float64
		wantOpts []survey.OptionCount
	}{
		{"no answers", yesNo, nil, 10, 0, 0, []survey.OptionCount{{0, "Yes", 0, 0}, {1, "No", 0, 0}}},
		{"nothing sent", yesNo, map[int]int{0: 1}, 0, 1, 0, []survey.OptionCount{{0, "Yes", 1, 100}, {1, "No", 0, 0}}},
		{"split", yesNo, map[int]int{0: 3, 1: 1}, 8, 4, 50, []survey.OptionCount{{0, "Yes", 3, 75}, {1, "No", 1, 25}}},
		{"zero option listed", three, map[int]int{0: 1, 2: 2}, 3, 3, 100,
			[]survey.OptionCount{{0, "Yes", 1, 33.33}, {1, "No", 0, 0}, {2, "Maybe", 2, 66.67}}},
		{"rounding", yesNo, map[int]int{0: 2, 1: 1}, 7, 3, 42.86, []survey.OptionCount{{0, "Yes", 2, 66.67}, {1, "No", 1, 33.33}}},
		{"index outside options", yesNo, map[int]int{0: 1, 7: 1}, 2, 2, 100, []survey.OptionCount{{0, "Yes", 1, 50}, {1, "No", 0, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := survey.Aggregate(tt.options, tt.counts, tt.sent)
			require.Equal(t, tt.total, s.TotalResponses)
			require.Equal(t, tt.sent, s.TotalMessagesSent)
			require.Equal(t, tt.rate, s.ResponseRate)
			require.Equal(t, tt.wantOpts, s.Options)
		})
	}
}
