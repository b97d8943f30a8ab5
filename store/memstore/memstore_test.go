package memstore_test

import (
	"testing"

	"github.com/heraldhq/herald/campaign"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/store/memstore"
	"github.com/heraldhq/herald/store/storetest"
	"github.com/heraldhq/herald/survey"
)

var (
	_ campaign.Store  = (*memstore.Store)(nil)
	_ delivery.Store  = (*memstore.Store)(nil)
	_ survey.Store    = (*memstore.Store)(nil)
	_ storetest.Store = (*memstore.Store)(nil)
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) storetest.Store { return memstore.New() })
}
