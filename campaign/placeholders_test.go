package campaign_test

import (
	"maps"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/campaign"
)

func TestPlaceholders(t *testing.T) {
	p := campaign.PlaceholdersOf(map[string]string{"b": "2", "a": "1"})
	require.Equal(t, campaign.Placeholders{{"a", "1"}, {"b", "2"}}, p, "ordered by name")
	p.Set("a", "one")
	p.Set("c", "3")
	v, ok := p.Get("a")
	require.True(t, ok)
	require.Equal(t, "one", v, "Set replaces a value")
	require.Len(t, p, 3, "one value a name")
	p.Delete("b")
	_, ok = p.Get("b")
	require.False(t, ok)
	require.Equal(t, map[string]string{"a": "one", "c": "3"}, maps.Collect(p.All()))

	scratch := map[string]string{"stale": "x"}
	require.Equal(t, map[string]string{"a": "one", "c": "3"}, p.Map(scratch), "Map clears the map it is given")
	require.Nil(t, campaign.Placeholders(nil).Map(nil))
	require.Nil(t, campaign.PlaceholdersOf(nil))
}
