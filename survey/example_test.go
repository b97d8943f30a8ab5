package survey_test

import (
	"fmt"

	"github.com/heraldhq/herald/messaging"
	"github.com/heraldhq/herald/survey"
)

// A survey sent to four people, answered by three: every option is listed,
// with its share of the answers.
func ExampleAggregate() {
	options := []messaging.SurveyOption{{OptionText: "Great"}, {OptionText: "OK"}, {OptionText: "Bad"}}
	s := survey.Aggregate(options, map[int]int{0: 2, 1: 1}, 4)
	fmt.Printf("%d responses of %d sent (%.2f%%)\n", s.TotalResponses, s.TotalMessagesSent, s.ResponseRate)
	for _, o := range s.Options {
		fmt.Printf("%d %s: %d (%.2f%%)\n", o.Index, o.Text, o.Count, o.Percentage)
	}
	// Output:
	// 3 responses of 4 sent (75.00%)
	// 0 Great: 2 (66.67%)
	// 1 OK: 1 (33.33%)
	// 2 Bad: 0 (0.00%)
}
