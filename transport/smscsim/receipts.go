package smscsim

import (
	"container/heap"
	"strings"
	"sync"
	"time"

	"github.com/heraldhq/herald/transport/smppwire"
	"github.com/linxGnu/gosmpp/data"
	"github.com/linxGnu/gosmpp/pdu"
)

// receipt is a delivery receipt to send for one accepted part.
type receipt struct {
	due      time.Time
	index    int // in the heap
	live     bool
	attempts int
	replayed bool // sent again after it was acknowledged (Config.ResendAcked)

	systemID string
	id       string
	handset  pdu.Address // the part's destination: the receipt's source
	sender   pdu.Address // the part's source: the receipt's destination
	text     string      // the receipt text
	state    byte        // message_state
	// mo, when set, makes this a mobile-originated part rather than a
	// receipt: its user data (after a user data header when the message
	// has several parts), in coding.
	mo     []byte
	coding data.Encoding
	udh    []byte
}

func newReceipt(sm *pdu.SubmitSM, id, systemID string, now time.Time) *receipt {
	stat, errCode, state := outcomeOf(sm.DestAddr.Address())
	switch sm.RegisteredDelivery & data.SM_SMSC_RECEIPT_MASK {
	case data.SM_SMSC_RECEIPT_REQUESTED:
	case data.SM_SMSC_RECEIPT_ON_FAILURE:
		if state == data.SM_STATE_DELIVERED {
			return nil
		}
	default:
		return nil
	}
	text := FormatReceipt(ReceiptFields{
		ID: id, Submitted: now, Done: now, Stat: stat, Err: errCode, Text: textPrefix(sm),
	})
	return &receipt{
		systemID: systemID,
		id:       id,
		handset:  sm.DestAddr,
		sender:   sm.SourceAddr,
		text:     text,
		state:    state,
	}
}

// ReceiptFields are the fields of a delivery receipt's text.
type ReceiptFields struct {
	ID        string    // the message id answered in submit_sm_resp
	Submitted time.Time // submit date, written to the minute
	Done      time.Time // done date, written to the minute
	Stat      string    // DELIVRD, UNDELIV, EXPIRED, REJECTD...
	Err       string    // the error code, "000" when delivered
	Text      string    // the start of the message
}

// FormatReceipt writes a receipt text the way the Server does:
//
//	id:<ID> sub:001 dlvrd:<001|000> submit date:YYMMDDhhmm done date:YYMMDDhhmm stat:<Stat> err:<Err> text:<Text>
//
// dlvrd is 001 when Stat is DELIVRD. Dates are written in their own time
// zone. Of Text at most the first 20 characters are written, those outside
// printable ASCII as '?'.
func FormatReceipt(f ReceiptFields) string {
	dlvrd := "000"
	if f.Stat == "DELIVRD" {
		dlvrd = "001"
	}
	var b strings.Builder
	b.Grow(160)
	b.WriteString("id:")
	b.WriteString(f.ID)
	b.WriteString(" sub:001 dlvrd:")
	b.WriteString(dlvrd)
	b.WriteString(" submit date:")
	b.WriteString(f.Submitted.Format("0601021504"))
	b.WriteString(" done date:")
	b.WriteString(f.Done.Format("0601021504"))
	b.WriteString(" stat:")
	b.WriteString(f.Stat)
	b.WriteString(" err:")
	b.WriteString(f.Err)
	b.WriteString(" text:")
	n := 0
	for _, c := range f.Text {
		if n == 20 {
			break
		}
		if c < 0x20 || c > 0x7E {
			c = '?'
		}
		b.WriteRune(c)
		n++
	}
	return b.String()
}

// textPrefix decodes the start of a part's text, enough for the 20
// characters a receipt quotes.
func textPrefix(sm *pdu.SubmitSM) string {
	raw, _ := sm.Message.GetMessageData()
	dc := byte(data.GSM7BITCoding)
	if enc := sm.Message.Encoding(); enc != nil {
		dc = enc.DataCoding()
	}
	if cut := 40; len(raw) > cut {
		if dc == data.GSM7BITCoding && raw[cut-1] == 0x1B {
			cut--
		}
		raw = raw[:cut]
	}
	return decodeText(dc, raw)
}

// frame encodes the receipt as a deliver_sm.
func (r *receipt) frame(seq uint32, tlvs bool) []byte {
	d := pdu.NewDeliverSM().(*pdu.DeliverSM)
	d.SetSequenceNumber(int32(seq))
	d.SourceAddr = r.handset
	d.DestAddr = r.sender
	if r.mo != nil {
		ud := r.mo
		if r.udh != nil {
			d.EsmClass = data.SM_UDH_GSM
			ud = append(append([]byte(nil), r.udh...), r.mo...)
		}
		_ = d.Message.SetMessageDataWithEncoding(ud, r.coding)
		return smppwire.Encode(d)
	}
	d.EsmClass = data.SM_SMSC_DLV_RCPT_TYPE
	_ = d.Message.SetMessageDataWithEncoding([]byte(r.text), data.GSM7BIT)
	if tlvs {
		d.RegisterOptionalParam(pdu.Field{Tag: pdu.TagReceiptedMessageID, Data: append([]byte(r.id), 0)})
		d.RegisterOptionalParam(pdu.Field{Tag: pdu.TagMessageStateOption, Data: []byte{r.state}})
	}
	return smppwire.Encode(d)
}

// scheduler holds the receipts waiting to be sent, earliest first.
type scheduler struct {
	mu      sync.Mutex
	h       receiptHeap
	live    int // receipts not yet acknowledged
	wakeCh  chan struct{}
	stopCh  chan struct{}
	stopped sync.Once
}

func (q *scheduler) init() {
	q.wakeCh = make(chan struct{}, 1)
	q.stopCh = make(chan struct{})
}

// add schedules r at due.
func (q *scheduler) add(r *receipt, due time.Time) {
	q.mu.Lock()
	if !r.live {
		r.live = true
		q.live++
	}
	r.due = due
	heap.Push(&q.h, r)
	q.mu.Unlock()
}

// done counts an acknowledged receipt.
func (q *scheduler) done() {
	q.mu.Lock()
	q.live--
	q.mu.Unlock()
}

func (q *scheduler) pending() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.live
}

// wake tells the dispatcher something changed.
func (q *scheduler) wake() {
	select {
	case q.wakeCh <- struct{}{}:
	default:
	}
}

func (q *scheduler) stop() { q.stopped.Do(func() { close(q.stopCh) }) }

// due pops up to max receipts due at now, and tells how long until the
// next one.
func (q *scheduler) due(now time.Time, max int) ([]*receipt, time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []*receipt
	for len(q.h) > 0 && len(out) < max && !q.h[0].due.After(now) {
		out = append(out, heap.Pop(&q.h).(*receipt))
	}
	wait := time.Hour
	if len(q.h) > 0 {
		wait = q.h[0].due.Sub(now)
	}
	return out, wait
}

// putBack returns receipts that found no session, keeping their due time.
func (q *scheduler) putBack(rs []*receipt) {
	q.mu.Lock()
	for _, r := range rs {
		heap.Push(&q.h, r)
	}
	q.mu.Unlock()
}

// dispatch sends due receipts until the Server closes. When no session
// can take one (none bound, or windows full) it waits for a change: a
// bind, a deliver_sm_resp, a lost connection, or 50ms.
func (s *Server) dispatch() {
	q := &s.sched
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		batch, wait := q.due(time.Now(), 512)
		blocked := false
		for i, r := range batch {
			if !s.deliverReceipt(r) {
				q.putBack(batch[i:])
				blocked = true
				wait = 50 * time.Millisecond
				break
			}
		}
		if len(batch) > 0 && !blocked {
			continue
		}
		timer.Reset(wait)
		select {
		case <-timer.C:
		case <-q.wakeCh:
		case <-q.stopCh:
			return
		}
	}
}

// deliverReceipt hands r to a receiving session with room in its window.
func (s *Server) deliverReceipt(r *receipt) bool {
	if s.stalledNow()&StallReceipts != 0 {
		return false
	}
	for _, cn := range s.receivers(r.systemID) {
		if cn.deliver(r) {
			return true
		}
	}
	return false
}

type receiptHeap []*receipt

func (h receiptHeap) Len() int           { return len(h) }
func (h receiptHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h receiptHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *receiptHeap) Push(x any) {
	r := x.(*receipt)
	r.index = len(*h)
	*h = append(*h, r)
}
func (h *receiptHeap) Pop() any {
	old := *h
	n := len(old)
	r := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	return r
}
