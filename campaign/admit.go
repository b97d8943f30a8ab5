package campaign

import (
	"context"
	"sync"

	"github.com/heraldhq/herald/messaging"
)

// maxAdmitBatch bounds how many messages one grouped admission writes.
const maxAdmitBatch = 256

// admitQueue groups the messages that concurrent AddMessage calls admit
// into shared store writes (group commit). While one write is under way,
// arriving messages queue; when it ends, the oldest waiting caller writes
// everything queued meanwhile in one AdmitMessages per company. An idle
// service therefore writes a message at once, alone, and a busy one pays
// one transaction for many messages instead of one each.
//
// A grouped write that fails is retried message by message, so that an
// error (capacity reached, campaign gone, a caller's cancelled context)
// reaches only the messages it concerns.
type admitQueue struct {
	mu      sync.Mutex
	writing bool
	queue   []*admission
}

// admission is one message waiting to be admitted.
type admission struct {
	ctx       context.Context
	companyID messaging.ID
	msg       *messaging.Message
	err       error
	done      chan struct{} // closed once err is set
	lead      chan struct{} // signalled when this caller is to write next
}

// admit writes m through the queue and returns its own outcome.
func (s *Service) admit(ctx context.Context, companyID messaging.ID, m *messaging.Message) error {
	a := &admission{ctx: ctx, companyID: companyID, msg: m, done: make(chan struct{}), lead: make(chan struct{}, 1)}
	q := &s.admissions
	q.mu.Lock()
	q.queue = append(q.queue, a)
	if q.writing {
		q.mu.Unlock()
		// The caller waits for its outcome even when its context ends:
		// the message may be written by then, and a caller told otherwise
		// would send it again.
		select {
		case <-a.done:
			return a.err
		case <-a.lead:
		}
		q.mu.Lock()
	}
	q.writing = true
	n := min(len(q.queue), maxAdmitBatch)
	batch := make([]*admission, n)
	copy(batch, q.queue)
	q.queue = append(q.queue[:0], q.queue[n:]...)
	q.mu.Unlock()

	s.writeAdmissions(batch)

	q.mu.Lock()
	if len(q.queue) > 0 {
		q.queue[0].lead <- struct{}{}
	} else {
		q.writing = false
	}
	q.mu.Unlock()
	<-a.done
	return a.err
}

// writeAdmissions writes a batch, one AdmitMessages per company, in the
// order the messages came.
func (s *Service) writeAdmissions(batch []*admission) {
	if len(batch) == 1 {
		a := batch[0]
		a.finish(s.store.AdmitMessages(a.ctx, a.companyID, []*messaging.Message{a.msg}, s.limits.MaxPending))
		return
	}
	// The batch outlives any one caller's context: a caller that goes
	// away must not fail the others' messages.
	ctx := context.WithoutCancel(batch[0].ctx)
	var companies []messaging.ID
	groups := make(map[messaging.ID][]*admission)
	for _, a := range batch {
		if _, ok := groups[a.companyID]; !ok {
			companies = append(companies, a.companyID)
		}
		groups[a.companyID] = append(groups[a.companyID], a)
	}
	for _, id := range companies {
		group := groups[id]
		msgs := make([]*messaging.Message, len(group))
		for i, a := range group {
			msgs[i] = a.msg
		}
		if err := s.store.AdmitMessages(ctx, id, msgs, s.limits.MaxPending); err != nil {
			for _, a := range group {
				a.finish(s.store.AdmitMessages(a.ctx, a.companyID, []*messaging.Message{a.msg}, s.limits.MaxPending))
			}
			continue
		}
		for _, a := range group {
			a.finish(nil)
		}
	}
}

func (a *admission) finish(err error) {
	a.err = err
	close(a.done)
}
