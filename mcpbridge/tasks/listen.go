package tasks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Task status notifications (notifications/tasks): a client of protocol
// 2026-07-28 over HTTP names tasks in a subscriptions/listen request
// (params.notifications.taskIds), and the stream sends each task, whole,
// as tasks/get would show it, whenever its status or its questions
// change, until every task named has ended. The go-sdk's own
// subscriptions/listen knows no task IDs: the HTTP layer hands such a
// request here (Manager.Listen), and the other subscriptions to the SDK.

// listenRequest is a subscriptions/listen request, as far as tasks go.
type listenRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Meta          map[string]any `json:"_meta"`
		Notifications struct {
			TaskIDs []string `json:"taskIds"`
		} `json:"notifications"`
	} `json:"params"`
}

// Bounds of a task subscription.
const (
	maxListenTasks = 64
	listenTick     = 250 * time.Millisecond
)

// taskListen returns the subscriptions/listen request of body when it
// names tasks.
func taskListen(body []byte) (*listenRequest, bool) {
	if !bytes.Contains(body, []byte(`subscriptions/listen`)) || !bytes.Contains(body, []byte(`taskIds`)) {
		return nil, false
	}
	var req listenRequest
	if json.Unmarshal(body, &req) != nil || req.Method != "subscriptions/listen" || len(req.ID) == 0 || req.Params.Notifications.TaskIDs == nil {
		return nil, false
	}
	return &req, true
}

// Listen serves r, a request of protocol 2026-07-28 whose body the HTTP
// layer read, when it is a subscriptions/listen request naming tasks,
// and reports whether it did; it leaves every other request to the
// caller, and every request when the extension is not offered.
func (m *Manager) Listen(w http.ResponseWriter, r *http.Request, body []byte) bool {
	if !m.opts.Offered() {
		return false
	}
	req, ok := taskListen(body)
	if ok {
		m.serveTaskListen(w, r, req)
	}
	return ok
}

// writeRPCError answers a request with a JSON-RPC error, as the go-sdk's
// stateless handler does (HTTP 400 for the errors it maps so).
func writeRPCError(w http.ResponseWriter, id json.RawMessage, err *jsonrpc.Error) {
	data, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": err})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	w.Write(data)
}

// serveTaskListen serves a subscriptions/listen request naming tasks.
func (m *Manager) serveTaskListen(w http.ResponseWriter, r *http.Request, req *listenRequest) {
	caps, _ := req.Params.Meta["io.modelcontextprotocol/clientCapabilities"].(map[string]any)
	ext, _ := caps["extensions"].(map[string]any)
	if _, ok := ext[Extension]; !ok {
		writeRPCError(w, req.ID, errMissingTasks().(*jsonrpc.Error))
		return
	}
	if method := r.Header.Get("Mcp-Method"); method != req.Method {
		writeRPCError(w, req.ID, &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: "header mismatch: the Mcp-Method header does not match the body's method"})
		return
	}
	if len(req.Params.Notifications.TaskIDs) > maxListenTasks {
		writeRPCError(w, req.ID, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("at most %d task IDs in one subscription", maxListenTasks)})
		return
	}
	token := m.host.Token(&mcp.RequestExtra{Header: r.Header})
	type watched struct {
		id   string
		ref  taskRef
		last string // what was last sent: status and questions
		done bool
	}
	var tasks []*watched
	agreed := []string{}
	for _, id := range req.Params.Notifications.TaskIDs {
		ref, err := m.lookupTask(id, token, nil)
		if err != nil || slices.Contains(agreed, id) {
			continue // not this client's, or named twice: not agreed
		}
		tasks = append(tasks, &watched{id: id, ref: ref})
		agreed = append(agreed, id)
	}
	var sub any
	json.Unmarshal(req.ID, &sub)
	meta := map[string]any{mcp.MetaKeySubscriptionID: sub}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	send := func(msg any) bool {
		data, _ := json.Marshal(msg)
		if _, err := fmt.Fprintf(w, "event: message\ndata: %s\n\n", data); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send(map[string]any{"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
		"params": map[string]any{"notifications": map[string]any{"taskIds": agreed}, "_meta": meta}}) {
		return
	}
	ctx := r.Context()
	deadline := time.NewTimer(m.host.MaxTimeout + m.opts.TTL)
	defer deadline.Stop()
	tick := time.NewTicker(listenTick)
	defer tick.Stop()
	for {
		left := 0
		for _, wt := range tasks {
			if wt.done {
				continue
			}
			var v taskView
			if wt.ref.t != nil {
				v = wt.ref.t.view()
			} else {
				rv, err := m.remoteTask(ctx, wt.id, wt.ref.tk)
				if err != nil {
					wt.done = true // expired or gone: nothing more to say
					continue
				}
				v = rv
			}
			key := v.Status
			for k := range v.Inputs {
				key += " " + k
			}
			if key != wt.last {
				n := v.wire("complete")
				n.ResultType = ""
				n.Meta = meta
				var params map[string]any
				data, _ := json.Marshal(n)
				json.Unmarshal(data, &params)
				delete(params, "resultType")
				if !send(map[string]any{"jsonrpc": "2.0", "method": "notifications/tasks", "params": params}) {
					return
				}
				wt.last = key
			}
			if taskEnded(v.Status) {
				wt.done = true
				continue
			}
			left++
		}
		if left == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-deadline.C:
			left = 0
		case <-tick.C:
		}
		if left == 0 {
			break
		}
	}
	send(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{"resultType": "complete", "_meta": meta}})
}
