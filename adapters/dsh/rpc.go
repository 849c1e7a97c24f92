package dsh

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/bridge-dev/bridge/core"
)

// maxResponse bounds one RPC response body (a long session's history page).
const maxResponse = 256 << 20

// request is the envelope of every DSH web RPC call.
type request struct {
	Type    string `json:"type"`
	RPCID   string `json:"rpcId"`
	Method  string `json:"method"`
	Payload any    `json:"payload"`
}

// response is the envelope of every DSH web RPC answer.
type response struct {
	Type   string `json:"type"`
	RPCID  string `json:"rpcId"`
	Result *struct {
		OK    bool            `json:"ok"`
		Value json.RawMessage `json:"value"`
		Error *RPCError       `json:"error"`
	} `json:"result"`
}

// RPCError is an error DSH answered with ({ok:false,error:{code,message,
// details}}). GoalCode is details.goalCode when DSH set one
// (GOAL_STALE_REVISION, GOAL_ALREADY_EXISTS…).
type RPCError struct {
	Method  string          `json:"-"`
	Code    string          `json:"code"`
	Message string          `json:"message"`
	Details json.RawMessage `json:"details,omitempty"`
}

func (e *RPCError) Error() string {
	s := "dsh " + e.Method + ": "
	if e.Code != "" {
		s += e.Code + ": "
	}
	if gc := e.GoalCode(); gc != "" {
		s += "[" + gc + "] "
	}
	return s + e.Message
}

// GoalCode returns details.goalCode, or "".
func (e *RPCError) GoalCode() string {
	var d struct {
		GoalCode string `json:"goalCode"`
	}
	_ = json.Unmarshal(e.Details, &d)
	return d.GoalCode
}

// Goal error codes DSH reports in details.goalCode.
const (
	goalStale      = "GOAL_STALE_REVISION"
	goalExists     = "GOAL_ALREADY_EXISTS"
	goalTransition = "GOAL_INVALID_TRANSITION"
)

// client calls the DSH web RPC under base (".../api").
type client struct {
	base    string
	http    *http.Client
	headers http.Header
	prefix  string
	n       atomic.Int64
}

func newClient(base string, hc *http.Client, headers http.Header) *client {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return &client{base: strings.TrimRight(base, "/"), http: hc, headers: headers, prefix: "bridge-" + hex.EncodeToString(b) + "-"}
}

// nextID returns a fresh rpcId; DSH stamps it on the user/message of a prompt
// (source.rpcId), which is how a live session recognises its own prompts.
func (c *client) nextID() string { return fmt.Sprintf("%s%d", c.prefix, c.n.Add(1)) }

// call POSTs method with payload and decodes the value into out (when non-nil).
// Legacy unary routes are "ns.method"; typed remotes are "ns/method" and take
// their payload wrapped as {"args": …}, which the caller supplies.
func (c *client) call(ctx context.Context, method string, payload, out any) error {
	_, err := c.callID(ctx, c.nextID(), method, payload, out)
	return err
}

func (c *client) callID(ctx context.Context, rpcID, method string, payload, out any) (json.RawMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, core.E(core.CodeCancelled, "dsh "+method+": cancelled", errors.Join(core.ErrCancelled, err))
	}
	if payload == nil {
		payload = struct{}{}
	}
	body, err := json.Marshal(request{Type: "client-request", RPCID: rpcID, Method: method, Payload: payload})
	if err != nil {
		return nil, core.E(core.CodeInvalid, "dsh "+method+": encode request", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/"+method, bytes.NewReader(body))
	if err != nil {
		return nil, core.E(core.CodeInvalid, "dsh "+method+": bad server URL "+c.base, err)
	}
	for k, vs := range c.headers {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, core.E(core.CodeCancelled, "dsh "+method+": cancelled", errors.Join(core.ErrCancelled, err))
		}
		return nil, core.E(core.CodeUnavailable, fmt.Sprintf("dsh %s: DSH web server at %s is unreachable", method, c.base), err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return nil, core.E(core.CodeHarness, "dsh "+method+": reading the response", err)
	}
	var env response
	decErr := json.Unmarshal(raw, &env)
	if decErr != nil || env.Result == nil {
		switch resp.StatusCode {
		case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented:
			return nil, core.E(core.CodeUnsupported,
				fmt.Sprintf("dsh %s: this DSH server does not serve the route (HTTP %d)", method, resp.StatusCode), core.ErrUnsupported)
		}
		return nil, core.Errorf(core.CodeHarness, "dsh %s: HTTP %d with no RPC result: %s", method, resp.StatusCode, snippet(raw))
	}
	if !env.Result.OK {
		rerr := env.Result.Error
		if rerr == nil {
			rerr = &RPCError{Message: "ok:false with no error"}
		}
		rerr.Method = method
		return nil, &core.Error{Code: codeFor(rerr), Message: rerr.Error(), Err: rerr}
	}
	if out != nil && len(env.Result.Value) > 0 {
		if err := json.Unmarshal(env.Result.Value, out); err != nil {
			return nil, core.E(core.CodeHarness, "dsh "+method+": unexpected result shape", err)
		}
	}
	return env.Result.Value, nil
}

// codeFor maps a DSH error to Bridge's closed set of codes.
func codeFor(e *RPCError) core.Code {
	switch e.GoalCode() {
	case goalStale, goalExists, goalTransition:
		return core.CodeConflict
	case "GOAL_NOT_FOUND":
		return core.CodeNotFound
	}
	c := strings.ToLower(e.Code)
	switch {
	case strings.Contains(c, "not-found"), strings.Contains(c, "not_found"), c == "notfound":
		return core.CodeNotFound
	case strings.Contains(c, "invalid"), strings.Contains(c, "bad-request"), strings.Contains(c, "validation"):
		return core.CodeInvalid
	case c == "unavailable":
		return core.CodeUnavailable
	case c == "busy":
		return core.CodeBusy
	}
	return core.CodeHarness
}

// rpcErr returns the DSH error inside err, if any.
func rpcErr(err error) *RPCError {
	var re *RPCError
	if errors.As(err, &re) {
		return re
	}
	return nil
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	if s == "" {
		s = "(empty body)"
	}
	return s
}
