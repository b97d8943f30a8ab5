package smppwire

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"time"
)

// ErrCloseRequested is what Run returns once it has written and flushed
// the frames queued before a nil one: the connection is to be closed.
var ErrCloseRequested = errors.New("close requested after the queued frames")

// writeBuffer is the size of the buffer Run writes through.
const writeBuffer = 64 << 10

// Writer is the write side of one connection: frames queued with Send are
// written in order by Run, the only goroutine that writes to the
// connection.
type Writer struct {
	conn    net.Conn
	timeout time.Duration
	queue   chan []byte
	done    <-chan struct{}
}

// NewWriter returns a Writer for conn. Send queues up to queue frames
// before it waits for Run; timeout is the write deadline of each batch
// Run writes; done is closed when the connection ends, which makes Send
// refuse frames and Run return.
func NewWriter(conn net.Conn, queue int, timeout time.Duration, done <-chan struct{}) *Writer {
	return &Writer{conn: conn, timeout: timeout, queue: make(chan []byte, queue), done: done}
}

// Send queues frame, waiting while the queue is full; false when done
// was closed first (frame will not be written). A nil frame asks Run to
// flush the frames queued before it and return ErrCloseRequested.
func (w *Writer) Send(frame []byte) bool {
	select {
	case w.queue <- frame:
		return true
	case <-w.done:
		return false
	}
}

// Run writes the queued frames until done is closed (it returns nil), a
// write fails (the error), or a nil frame was queued (ErrCloseRequested,
// after the frames before it were flushed; frames after it are not
// written). It takes every frame already queued into one batch and
// flushes when the queue runs dry.
func (w *Writer) Run() error {
	bw := bufio.NewWriterSize(w.conn, writeBuffer)
	for {
		var f []byte
		select {
		case f = <-w.queue:
		case <-w.done:
			return nil
		}
		_ = w.conn.SetWriteDeadline(time.Now().Add(w.timeout))
		closing := false
		for {
			if f == nil {
				closing = true
				break
			}
			if _, err := bw.Write(f); err != nil {
				return fmt.Errorf("write: %w", err)
			}
			if len(w.queue) == 0 {
				break
			}
			f = <-w.queue
		}
		if err := bw.Flush(); err != nil {
			return fmt.Errorf("write: %w", err)
		}
		if closing {
			return ErrCloseRequested
		}
	}
}
