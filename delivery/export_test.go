package delivery

// QueuedEvents returns how many callback status updates wait for a write.
func QueuedEvents(e *ChatEvents) int {
	return e.updates.Queued()
}

// Writers returns how many results writers d has.
func Writers(d *Dispatcher) int { return len(d.results) }

// SameWriter reports whether the send result u and the receipt of part
// pid go to the same results writer.
func SameWriter(d *Dispatcher, u *StatusUpdate, pid string) bool {
	return d.writerOf(u) == d.writer(pid)
}
