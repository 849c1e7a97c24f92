package dshtest

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

func post(t *testing.T, url, ctype, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(url, ctype, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&v)
	return resp.StatusCode, v
}

// TestWireRules checks the fake keeps DSH's wire rules: JSON only (415),
// unknown routes 404, envelopes echo the rpcId, and replayed answers are
// the recorded ones.
func TestWireRules(t *testing.T) {
	s := Start(t, Options{})
	if code, _ := post(t, s.URL+"/session.list", "text/plain", `{}`); code != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain: HTTP %d, want 415", code)
	}
	if code, _ := post(t, s.URL+"/session.historyWindow", "application/json", `{"type":"client-request","rpcId":"x","method":"session.historyWindow","payload":{}}`); code != http.StatusNotFound {
		t.Errorf("historyWindow: HTTP %d, want 404 (rc.8 has no such route)", code)
	}
	code, v := post(t, s.URL+"/agentPreset.list", "application/json", `{"type":"client-request","rpcId":"r-1","method":"agentPreset.list","payload":{}}`)
	if code != 200 || v["rpcId"] != "r-1" || v["type"] != "server-response" {
		t.Fatalf("HTTP %d %v", code, v)
	}
	var want any
	_ = json.Unmarshal(s.replay["agentPreset.list"], &want)
	if got := v["result"].(map[string]any)["value"]; !reflect.DeepEqual(got, want) {
		t.Errorf("agentPreset.list is not the recorded answer:\n%v\n%v", got, want)
	}
	_, v = post(t, s.URL+"/session.history", "application/json", `{"type":"client-request","rpcId":"r-2","method":"session.history","payload":{"sessionId":"nope"}}`)
	if r := v["result"].(map[string]any); r["ok"] != false {
		t.Errorf("history of an unknown session: %v", r)
	}
}
