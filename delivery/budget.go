package delivery

import (
	"sync"
	"time"

	"github.com/heraldhq/herald/messaging"
)

// ConnectorPicker is implemented by SMS senders that route among
// connectors of different capacities, such as the router of package
// smsroute. The SMS lane asks it which connector each claimed SMS goes
// through, and keeps no more of a connector's SMS claimed and not settled
// than the connector can use (its budget): a connector capped at a low
// rate then holds a few seconds of its rate, not every place of the lane,
// and the others' SMS (another company's codes and alerts) are claimed and
// sent meanwhile. A campaign's next claims take no more of its messages
// than the room its connector has left (Claim.CampaignQuotas), and a
// claimed SMS past its connector's budget goes back to Pending unsent.
type ConnectorPicker interface {
	// PickConnector names the connector sms would go through now, and how
	// many SMS that connector can usefully hold at once; 0: no bound.
	PickConnector(sms SMS) (name string, budget int)
}

// linkTTL is how long a campaign is taken to send through the connector
// its last SMS went through, while that connector has room: the link to a
// full one is kept until it has room.
const linkTTL = time.Minute

// connLoads counts, by connector, the SMS of the lane that went to it and
// are not settled, and remembers which connector each campaign's SMS go
// through.
type connLoads struct {
	mu    sync.Mutex
	conns map[string]*connLoad
	links map[messaging.ID]campaignLink
}

// connLoad is one connector's SMS in flight and its budget.
type connLoad struct {
	n, budget int
}

// campaignLink is the connector of a campaign's last SMS, and when.
type campaignLink struct {
	conn string
	at   time.Time
}

// take counts an SMS of campaign id going through connector name, whose
// budget is budget (0: none), and reports true; when the connector holds
// its budget already, it counts nothing and reports false: the SMS is to go
// back to Pending unsent. Either way the campaign is linked to the
// connector, so that its next claims take no more than the room left; a
// link to a full connector is kept over one to another connector, so that
// a campaign some of whose SMS found their connector full waits for it.
func (c *connLoads) take(id messaging.ID, name string, budget int, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conns == nil {
		c.conns = map[string]*connLoad{}
		c.links = map[messaging.ID]campaignLink{}
	}
	l := c.conns[name]
	if l == nil {
		l = &connLoad{}
		c.conns[name] = l
	}
	l.budget = budget
	if old, ok := c.links[id]; !ok || old.conn == name || !c.conns[old.conn].full() {
		c.links[id] = campaignLink{conn: name, at: now}
	}
	if l.full() {
		return false
	}
	l.n++
	return true
}

// full reports whether the connector holds its budget (none: never).
func (l *connLoad) full() bool {
	return l.budget > 0 && l.n >= l.budget
}

// remove counts an SMS of connector name out.
func (c *connLoads) remove(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l := c.conns[name]; l != nil {
		l.n--
	}
}

// quotas returns the Claim.CampaignQuotas of the campaigns whose connector
// has a budget: the room left in it, shared among them; nil when none.
func (c *connLoads) quotas(now time.Time) map[messaging.ID]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.links) == 0 {
		return nil
	}
	by := map[string][]messaging.ID{}
	for id, link := range c.links {
		l := c.conns[link.conn]
		if now.Sub(link.at) > linkTTL && !l.full() {
			// A full connector keeps its campaigns: they would take a
			// claim's worth of SMS back and forth.
			delete(c.links, id)
			continue
		}
		if l.budget > 0 {
			by[link.conn] = append(by[link.conn], id)
		}
	}
	if len(by) == 0 {
		return nil
	}
	q := map[messaging.ID]int{}
	for name, ids := range by {
		l := c.conns[name]
		room := max(0, l.budget-l.n)
		for i, id := range ids {
			q[id] = room / len(ids)
			if i < room%len(ids) {
				q[id]++
			}
		}
	}
	return q
}
