package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/coder/websocket"
)

// writeTimeout bounds one message write to a client that stopped reading.
const writeTimeout = 30 * time.Second

// wsConn is an rpc.MessageConn over a WebSocket.
type wsConn struct{ c *websocket.Conn }

// ReadMessage reads one message, keeping at most max bytes of it.
func (w *wsConn) ReadMessage(ctx context.Context, max int64) ([]byte, int64, bool, error) {
	typ, r, err := w.c.Reader(ctx)
	if err != nil {
		switch websocket.CloseStatus(err) {
		case websocket.StatusNormalClosure, websocket.StatusGoingAway, websocket.StatusNoStatusRcvd:
			return nil, 0, false, io.EOF
		}
		if errors.Is(err, io.EOF) {
			return nil, 0, false, io.EOF
		}
		return nil, 0, false, fmt.Errorf("web: reading a WebSocket message: %w", err)
	}
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, 0, false, fmt.Errorf("web: reading a WebSocket message: %w", err)
	}
	if int64(len(data)) > max {
		rest, err := io.Copy(io.Discard, r)
		if err != nil {
			return nil, 0, false, fmt.Errorf("web: discarding an oversized WebSocket message: %w", err)
		}
		return nil, int64(len(data)) + rest, typ == websocket.MessageBinary, nil
	}
	return data, int64(len(data)), typ == websocket.MessageBinary, nil
}

// WriteMessage sends data as one text message.
func (w *wsConn) WriteMessage(ctx context.Context, data []byte) error {
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	return w.c.Write(ctx, websocket.MessageText, data)
}

// Close closes the WebSocket normally.
func (w *wsConn) Close() error {
	err := w.c.Close(websocket.StatusNormalClosure, "")
	if err != nil && websocket.CloseStatus(err) != -1 {
		return nil
	}
	return err
}
