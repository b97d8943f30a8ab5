package survey

import (
	"math"

	"github.com/heraldhq/herald/messaging"
)

// OptionCount is one line of a survey summary.
type OptionCount struct {
	Index      int
	Text       string
	Count      int
	Percentage float64 // of the responses, two decimals
}

// Summary summarises the answers to a survey campaign.
type Summary struct {
	CampaignID        messaging.ID
	CampaignName      string
	TotalResponses    int
	TotalMessagesSent int
	ResponseRate      float64 // responses per message sent, as a percentage with two decimals
	Options           []OptionCount
}

// Aggregate builds the summary of a survey from its options, the number of
// answers per option index and the number of messages sent. Every option is
// listed, in order, with zero counts included; answers to an index outside
// the options are counted in TotalResponses but in no option. Percentages
// are of the responses and the response rate of the messages sent, rounded
// to two decimals; both are 0 when their base is 0.
func Aggregate(options []messaging.SurveyOption, counts map[int]int, sent int) Summary {
	var s Summary
	for _, n := range counts {
		s.TotalResponses += n
	}
	s.TotalMessagesSent = sent
	s.ResponseRate = percent(s.TotalResponses, sent)
	s.Options = make([]OptionCount, len(options))
	for i, o := range options {
		s.Options[i] = OptionCount{Index: i, Text: o.OptionText, Count: counts[i], Percentage: percent(counts[i], s.TotalResponses)}
	}
	return s
}

func percent(n, of int) float64 {
	if of <= 0 {
		return 0
	}
	return math.Round(float64(n)*10000/float64(of)) / 100
}
