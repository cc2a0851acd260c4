package entrypoint

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/mcp-code-exec/mcp-server-code-execution-mode/engine"
)

// maxFrameBytes bounds one frame in either direction.
const maxFrameBytes = 16 << 20

// Bounds of the members of a frame from the sandbox, beyond its size.
const (
	// maxVersionBytes bounds the runtime and python members of ready.
	maxVersionBytes = 256
	// maxUnixSeconds is the latest plausible boot or sent time (year
	// 2286); later or negative ones are ignored.
	maxUnixSeconds = 1e10
	// maxDurationMS bounds duration_ms so that it fits a time.Duration.
	maxDurationMS = float64(math.MaxInt64 / int64(time.Millisecond))
	// maxDroppedBytes bounds a dropped count (256 TiB): the counts are
	// added to the host's own without overflowing.
	maxDroppedBytes = 1 << 48
	// maxProgressMessage bounds a progress frame's message: a longer one
	// is cut (the runtime sends at most 1,024 characters).
	maxProgressMessage = 4 << 10
	// maxOutFiles bounds the files of a result (the runtime sends at most
	// 100); maxOutPath bounds the bytes of each path.
	maxOutFiles = 100
	maxOutPath  = 4096
	// maxFileBytes bounds a file's reported size (256 TiB).
	maxFileBytes = 1 << 48
)

// OutDir is the sandbox directory whose new and changed files come back
// with a call (engine.OutDir).
const OutDir = engine.OutDir

// errProtocol reports a sandbox that broke the frame protocol.
var errProtocol = errors.New("sandbox protocol violation")

// Frame types.
const (
	frameReady     = "ready"
	frameOut       = "out"
	frameStarted   = "started"
	frameProgress  = "progress"
	frameImage     = "image"
	frameFile      = "file"
	frameRPC       = "rpc"
	frameResult    = "result"
	frameExec      = "exec"
	frameRPCResult = "rpc_result"
	frameInterrupt = "interrupt"
	frameEgress    = "egress"
	frameSite      = "site"
	frameNetOpen   = "net_open"
	frameNetData   = "net_data"
	frameNetClose  = "net_close"
	frameNetAck    = "net_ack"
	frameBusy      = "busy"
	framePersist   = "persist"
	// frameSleepClaim asks the runtime for the right to put the sandbox
	// to sleep, frameSleepClaimed answers it (sleep.go).
	frameSleepClaim   = "sleep_claim"
	frameSleepClaimed = "sleep_claimed"
	statusOK          = "ok"
	statusError       = "error"
	statusInterrupt   = "interrupted"
	statusExit        = "exit"
)

// A frame is a decoded, validated frame from the sandbox. Which fields are
// meaningful depends on T.
type frame struct {
	T string
	// ready
	Protocol int
	Runtime  string
	Python   string
	// Boot and Sent are the sandbox's wall-clock times (Unix seconds) when
	// the bootstrap began and when the ready frame was sent; 0 when absent.
	// They are only used to report where a start's time went.
	Boot, Sent float64
	// LastCall is when the sandbox's last call ended (or it started), in
	// its clock, Unix seconds; 0 when absent.
	LastCall float64
	// Granted is a sleep_claimed frame's answer.
	Granted bool
	// out and result: the exec id; rpc: RPCID
	ID    string
	RPCID int64
	// out
	Stream string
	Data   string
	// progress
	Progress Progress
	// image
	Image Image
	// file: a file out sent with the result
	Path     string
	FileData []byte
	// rpc
	Payload json.RawMessage
	// net_open, net_data, net_close, net_ack: the connection; net_data:
	// the length of its bytes (NetLen), which follow the frame's line
	// and which the reader puts in NetData; net_ack: the bytes
	// acknowledged (NetN)
	CID     int64
	Install bool // net_open: a connection of the install endpoint
	NetLen  int
	NetData []byte
	NetN    int
	// result
	Status     string
	ExitCode   int
	ExcType    string
	ExcMessage string
	Traceback  string
	DurationMS float64
	Dropped    map[string]int64
	Killed     int
	Files      []OutFile
	// lane: the runtime's answer to the offer, or its report of a break
	Lane laneReport
	// read_end: the file's size, or the errno name of why it could not
	// be read (ReadErr; Data says more)
	Size    int64
	ReadErr string
}

// wireFrame is the JSON shape of a frame from the sandbox.
type wireFrame struct {
	T          *string          `json:"t"`
	Protocol   *int             `json:"protocol"`
	Runtime    string           `json:"runtime"`
	Python     string           `json:"python"`
	Boot       float64          `json:"boot"`
	Sent       float64          `json:"sent"`
	LastCall   float64          `json:"last_call"`
	ID         json.RawMessage  `json:"id"`
	Stream     string           `json:"stream"`
	Data       *string          `json:"data"`
	Payload    json.RawMessage  `json:"payload"`
	Status     string           `json:"status"`
	ExitCode   *int             `json:"exit_code"`
	ExcType    string           `json:"exc_type"`
	ExcMessage string           `json:"exc_message"`
	Traceback  string           `json:"traceback"`
	DurationMS float64          `json:"duration_ms"`
	Dropped    map[string]int64 `json:"dropped"`
	Killed     int              `json:"killed"`
	Progress   *float64         `json:"progress"`
	Total      *float64         `json:"total"`
	Message    *string          `json:"message"`
	MIME       string           `json:"mime"`
	Path       *string          `json:"path"`
	Files      []wireFile       `json:"files"`
	CID        *int64           `json:"cid"`
	N          *int64           `json:"n"`
	Len        *int64           `json:"len"`
	Install    *bool            `json:"install"`
	OK         *bool            `json:"ok"`
	Broke      bool             `json:"broke"`
	Error      string           `json:"error"`
	Wrote      *int64           `json:"wrote"`
	Read       *int64           `json:"read"`
	Size       *int64           `json:"size"`
	Errno      string           `json:"errno"`
}

// wireFile is the JSON shape of a file of a result.
type wireFile struct {
	Path *string `json:"path"`
	Size *int64  `json:"size"`
}

// parseFrame decodes and validates one line from the sandbox.
func parseFrame(line []byte) (frame, error) {
	var w wireFrame
	if err := json.Unmarshal(line, &w); err != nil {
		return frame{}, fmt.Errorf("%w: malformed frame: %v (%.60q)", errProtocol, err, line)
	}
	if w.T == nil {
		return frame{}, fmt.Errorf("%w: frame without a type", errProtocol)
	}
	f := frame{T: *w.T}
	bad := func(what string) (frame, error) {
		return frame{}, fmt.Errorf("%w: %s frame %s", errProtocol, f.T, what)
	}
	switch {
	case w.Len == nil:
	case f.T == frameImage || f.T == frameFile:
		// On the lane, an image or a file comes raw after its line.
		if *w.Len <= 0 || *w.Len > maxFrameBytes || w.Data != nil {
			return bad("with len out of bounds, or with both len and data")
		}
		f.NetLen = int(*w.Len)
	case f.T != frameNetData && f.T != frameReadData:
		return bad("with len (only net_data, read_data, image and file carry bytes)")
	}
	switch f.T {
	case frameReady:
		if w.Protocol == nil {
			return bad("without protocol")
		}
		if len(w.Runtime) > maxVersionBytes || len(w.Python) > maxVersionBytes {
			return bad("with a runtime or python version over " + strconv.Itoa(maxVersionBytes) + " bytes")
		}
		f.Protocol, f.Runtime, f.Python = *w.Protocol, w.Runtime, w.Python
		f.Boot, f.Sent = plausibleTime(w.Boot), plausibleTime(w.Sent)
		f.LastCall = plausibleTime(w.LastCall)
	case frameBusy:
		id, ok := stringID(w.ID)
		if !ok {
			return bad("without a string id")
		}
		f.ID = id
	case frameStarted:
		id, ok := stringID(w.ID)
		if !ok {
			return bad("without a string id")
		}
		f.ID = id
	case frameOut:
		id, ok := stringID(w.ID)
		if !ok {
			return bad("without a string id")
		}
		if w.Stream != "stdout" && w.Stream != "stderr" {
			return bad("with stream " + strconv.Quote(w.Stream))
		}
		if w.Data == nil {
			return bad("without data")
		}
		f.ID, f.Stream, f.Data = id, w.Stream, *w.Data
	case frameProgress:
		id, ok := stringID(w.ID)
		if !ok {
			return bad("without a string id")
		}
		if w.Progress == nil {
			return bad("without progress")
		}
		f.ID, f.Progress.Progress = id, *w.Progress
		if w.Total != nil && *w.Total > 0 {
			f.Progress.Total = *w.Total
		}
		if w.Message != nil {
			f.Progress.Message = cutUTF8(*w.Message, maxProgressMessage)
		}
	case frameImage:
		id, ok := stringID(w.ID)
		if !ok {
			return bad("without a string id")
		}
		f.ID = id
		if f.NetLen > 0 {
			if !imageTypes[w.MIME] {
				return bad(fmt.Sprintf("with image type %q", cutUTF8(w.MIME, 64)))
			}
			f.Image.MIME = w.MIME // its bytes follow: see withPayload
			break
		}
		if w.Data == nil {
			return bad("without data")
		}
		img, err := decodeImage(w.MIME, *w.Data)
		if err != nil {
			return bad(err.Error())
		}
		f.Image = img
	case frameFile:
		id, ok := stringID(w.ID)
		if !ok {
			return bad("without a string id")
		}
		if w.Path == nil || w.Data == nil && f.NetLen == 0 {
			return bad("without path or data")
		}
		if err := checkOutPath(*w.Path); err != nil {
			return bad("with a " + err.Error())
		}
		if f.NetLen > 0 {
			f.ID, f.Path = id, *w.Path // its bytes follow: see withPayload
			break
		}
		b, err := base64.StdEncoding.DecodeString(*w.Data)
		if err != nil {
			return bad("with data that is not base64")
		}
		f.ID, f.Path, f.FileData = id, *w.Path, b
	case frameRPC:
		n, err := strconv.ParseInt(string(w.ID), 10, 64)
		if err != nil || n <= 0 {
			return bad("without a positive integer id")
		}
		if p := bytes.TrimSpace(w.Payload); len(p) == 0 || p[0] != '{' {
			return bad("without an object payload")
		}
		f.RPCID, f.Payload = n, w.Payload
	case frameResult:
		id, ok := stringID(w.ID)
		if !ok {
			return bad("without a string id")
		}
		switch w.Status {
		case statusOK, statusError, statusInterrupt:
		case statusExit:
			if w.ExitCode == nil {
				return bad("with status exit but no exit_code")
			}
			f.ExitCode = *w.ExitCode
		default:
			return bad("with status " + strconv.Quote(w.Status))
		}
		for k, v := range w.Dropped {
			if !droppedKinds[k] || v < 0 || v > maxDroppedBytes {
				return bad("with a bad dropped count")
			}
		}
		files, err := outFiles(w.Files)
		if err != nil {
			return bad(err.Error())
		}
		f.Files = files
		if w.DurationMS < 0 || w.DurationMS > maxDurationMS {
			return bad("with a bad duration_ms")
		}
		if w.Killed < 0 {
			return bad("with a negative killed count")
		}
		f.ID, f.Status = id, w.Status
		f.ExcType, f.ExcMessage, f.Traceback = w.ExcType, w.ExcMessage, w.Traceback
		f.DurationMS, f.Dropped, f.Killed = w.DurationMS, w.Dropped, w.Killed
	case frameNetOpen, frameNetClose, frameNetData, frameNetAck:
		if w.CID == nil || *w.CID < 0 || *w.CID > maxEgressCID {
			return bad("without a cid from 0 to 2^53")
		}
		f.CID = *w.CID
		if w.Install != nil {
			if f.T != frameNetOpen {
				return bad("with install (only net_open says it)")
			}
			f.Install = *w.Install
		}
		switch f.T {
		case frameNetData:
			if w.Len == nil || *w.Len <= 0 || *w.Len > egressChunk {
				return bad("without len from 1 to " + strconv.Itoa(egressChunk))
			}
			f.NetLen = int(*w.Len)
		case frameNetAck:
			if w.N == nil || *w.N <= 0 || *w.N > egressDownWindow {
				return bad("without n from 1 to " + strconv.Itoa(egressDownWindow))
			}
			f.NetN = int(*w.N)
		}
	case frameNetFD:
		if w.Install != nil {
			f.Install = *w.Install
		}
	case frameReadData, frameReadEnd:
		id, ok := stringID(w.ID)
		if !ok {
			return bad("without a string id")
		}
		f.ID = id
		if f.T == frameReadData {
			if w.Len == nil || *w.Len <= 0 || *w.Len > maxReadChunk {
				return bad("without len from 1 to " + strconv.Itoa(maxReadChunk))
			}
			f.NetLen = int(*w.Len)
			break
		}
		switch {
		case w.Errno != "":
			if len(w.Errno) > 32 {
				return bad("with an errno over 32 bytes")
			}
			f.ReadErr, f.Data = w.Errno, cutUTF8(w.Error, maxProgressMessage)
		case w.Size == nil || *w.Size < 0 || *w.Size > maxFileBytes:
			return bad("without a size or an errno")
		default:
			f.Size = *w.Size
		}
	case frameLane:
		if w.OK == nil {
			return bad("without ok")
		}
		f.Lane = laneReport{OK: *w.OK, Broke: w.Broke, Error: cutUTF8(w.Error, maxProgressMessage)}
		if w.Broke {
			if w.OK != nil && *w.OK || w.Wrote == nil || w.Read == nil || *w.Wrote < 0 || *w.Read < 0 {
				return bad("reporting a break without ok false and the bytes it wrote and read")
			}
			f.Lane.Wrote, f.Lane.Read = *w.Wrote, *w.Read
		}
	case frameSleepClaimed:
		if w.OK == nil {
			return bad("without ok")
		}
		f.Granted = *w.OK
	default:
		return frame{}, fmt.Errorf("%w: unknown frame type %q", errProtocol, f.T)
	}
	return f, nil
}

// withPayload completes f, a frame whose raw bytes (NetData) followed its
// line: an image's bytes must be of its type; a file's are its content.
func (f *frame) withPayload() error {
	switch f.T {
	case frameImage:
		if !IsImage(f.Image.MIME, f.NetData) {
			return fmt.Errorf("%w: image frame whose data is not %s", errProtocol, f.Image.MIME)
		}
		f.Image.Data, f.NetData = f.NetData, nil
	case frameFile:
		f.FileData, f.NetData = f.NetData, nil
	}
	return nil
}

// cutUTF8 returns s cut to at most max bytes, on a character boundary.
func cutUTF8(s string, max int) string {
	if len(s) <= max {
		return s
	}
	for max > 0 && !utf8.RuneStart(s[max]) {
		max--
	}
	return s[:max]
}

// plausibleTime returns unix, a wall-clock time in seconds, or 0 (absent)
// when it is negative or implausibly late.
func plausibleTime(unix float64) float64 {
	if unix < 0 || unix > maxUnixSeconds {
		return 0
	}
	return unix
}

// stringID returns the non-empty JSON string raw holds.
func stringID(raw json.RawMessage) (string, bool) {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil || s == "" {
		return "", false
	}
	return s, true
}

// readFrameLine reads one '\n'-terminated line of at most max bytes.
func readFrameLine(r *bufio.Reader, max int) ([]byte, error) {
	line, err := engine.ReadLine(r, max)
	switch {
	case errors.Is(err, engine.ErrLineTooLong):
		return nil, fmt.Errorf("%w: frame longer than %d bytes", errProtocol, max)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return nil, fmt.Errorf("%w: stream ended inside a frame", errProtocol)
	}
	return line, err
}

// Host → sandbox frames.
type execFrame struct {
	T         string `json:"t"`
	ID        string `json:"id"`
	Code      string `json:"code"`
	MaxOutput int    `json:"max_output"`
	// Progress asks for progress frames (runtime.report_progress).
	Progress bool `json:"progress,omitempty"`
	// MaxImages and MaxImageBytes bound the call's image frames.
	MaxImages     int   `json:"max_images"`
	MaxImageBytes int64 `json:"max_image_bytes"`
}

type rpcResultFrame struct {
	T      string          `json:"t"`
	ID     int64           `json:"id"`
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// siteFrame gives the runtime directories to add to its import path.
type siteFrame struct {
	T    string   `json:"t"`
	Dirs []string `json:"dirs"`
}

type interruptFrame struct {
	T  string `json:"t"`
	ID string `json:"id"`
}
