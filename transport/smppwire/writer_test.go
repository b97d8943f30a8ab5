package smppwire_test

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/heraldhq/herald/transport/smppwire"
	"github.com/stretchr/testify/require"
)

// recConn records what a Writer does with its connection. Only Write and
// SetWriteDeadline are used; the embedded net.Conn is nil.
type recConn struct {
	net.Conn
	writes    [][]byte
	deadlines int
	fail      error
}

func (c *recConn) Write(b []byte) (int, error) {
	if c.fail != nil {
		return 0, c.fail
	}
	c.writes = append(c.writes, append([]byte(nil), b...))
	return len(b), nil
}

func (c *recConn) SetWriteDeadline(time.Time) error {
	c.deadlines++
	return nil
}

// TestWriterBatchesUntilNil: the frames queued when Run starts leave in
// one write, in order, under one deadline; a nil frame ends Run with
// ErrCloseRequested after flushing them, and what was queued after it is
// never written.
func TestWriterBatchesUntilNil(t *testing.T) {
	c := &recConn{}
	w := smppwire.NewWriter(c, 8, time.Second, make(chan struct{}))
	for _, f := range [][]byte{[]byte("one"), []byte("two"), []byte("three"), nil, []byte("after")} {
		require.True(t, w.Send(f))
	}
	require.ErrorIs(t, w.Run(), smppwire.ErrCloseRequested)
	require.Equal(t, [][]byte{[]byte("onetwothree")}, c.writes)
	require.Equal(t, 1, c.deadlines)
}

// TestWriterDone: once done is closed Run returns nil and Send refuses a
// frame it cannot queue.
func TestWriterDone(t *testing.T) {
	done := make(chan struct{})
	close(done)
	c := &recConn{}
	w := smppwire.NewWriter(c, 0, time.Second, done)
	require.False(t, w.Send([]byte("late")))
	require.NoError(t, w.Run())
	require.Empty(t, c.writes)
}

// TestWriterError: a failed write ends Run with the error.
func TestWriterError(t *testing.T) {
	broken := errors.New("broken pipe")
	w := smppwire.NewWriter(&recConn{fail: broken}, 1, time.Second, make(chan struct{}))
	require.True(t, w.Send([]byte("frame")))
	err := w.Run()
	require.ErrorIs(t, err, broken)
	require.NotErrorIs(t, err, smppwire.ErrCloseRequested)
}

// TestWriterOverPipe: frames sent while Run is running reach the peer in
// order.
func TestWriterOverPipe(t *testing.T) {
	a, b := net.Pipe()
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	done := make(chan struct{})
	w := smppwire.NewWriter(a, 1, time.Minute, done)
	errc := make(chan error, 1)
	go func() { errc <- w.Run() }()
	buf := make([]byte, 2)
	for _, f := range []string{"ab", "cd", "ef"} {
		require.True(t, w.Send([]byte(f)))
		_, err := io.ReadFull(b, buf)
		require.NoError(t, err)
		require.Equal(t, f, string(buf))
	}
	close(done)
	require.NoError(t, <-errc)
}
