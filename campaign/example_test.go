package campaign_test

import (
	"fmt"

	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/messaging"
)

// A bulk campaign is accepted as Queuing, becomes Ready once its messages
// are written, is started by the caller and completes when every message
// has been handed to a provider.
func ExampleNext() {
	status, _ := campaign.Next("", campaign.EventCreateBulk)
	fmt.Println(status)
	for _, ev := range []campaign.Event{campaign.EventPrepared, campaign.EventStart, campaign.EventDrained} {
		status, _ = campaign.Next(status, ev)
		fmt.Println(status)
	}
	_, err := campaign.Next(messaging.CampaignCompleted, campaign.EventStart)
	fmt.Println(err)
	// Output:
	// Queuing
	// Ready
	// InProgress
	// Completed
	// Campaign is not ready: Campaign is Completed; only a Ready campaign can be started
}
