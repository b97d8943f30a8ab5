package delivery

import (
	"testing"

	"github.com/heraldhq/herald/messaging"
	"github.com/stretchr/testify/require"
)

// TestHaltReachesClaimsUnderWay: a claim that began before a halt joins
// the halted campaign's messages to a halted flight when it returns, and
// a claim begun after the halt (after a resume) joins a live one.
func TestHaltReachesClaimsUnderWay(t *testing.T) {
	var fs flights
	a, b := messaging.ID{1}, messaging.ID{2}

	before := fs.beginClaim()
	require.False(t, fs.halt(a, true), "nothing of a is being sent yet")
	after := fs.beginClaim()

	fa := fs.join(a, before)
	require.True(t, fa.isHalted(), "claimed before the halt: withdrawn")
	require.True(t, fa.cancelled)
	require.False(t, fs.join(b, before).isHalted(), "another campaign is not halted")
	require.False(t, fs.join(a, after).isHalted(), "claimed after the halt: sent")
	fs.endClaim(before)
	fs.endClaim(after)
	require.Empty(t, fs.halts, "the halt is forgotten once the claims before it ended")

	next := fs.beginClaim()
	require.False(t, fs.join(a, next).isHalted())
	fs.endClaim(next)
}

// TestHaltWithoutClaimsKeepsNothing: a halt with no claim under way
// withdraws what is being sent and leaves no record behind.
func TestHaltWithoutClaimsKeepsNothing(t *testing.T) {
	var fs flights
	a := messaging.ID{1}
	c := fs.beginClaim()
	f := fs.join(a, c)
	fs.endClaim(c)
	require.True(t, fs.halt(a, false))
	require.True(t, f.isHalted())
	require.False(t, f.cancelled)
	require.Empty(t, fs.halts)
	fs.leave(a, f)
	require.Empty(t, fs.m)
}
