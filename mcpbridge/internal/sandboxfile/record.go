package sandboxfile

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
)

// A record is a file of JSON data with a tag under the handle key, so
// that neither the sandbox's code (which can write where records are
// kept) nor a file read while it is being written passes for one. Its
// form on disk is what replicas of one version read of each other:
// {"data": DATA, "tag": TAG}, TAG being Keys.Tag of the record's parts
// and DATA as text.
type record struct {
	Data json.RawMessage `json:"data"`
	Tag  string          `json:"tag"`
}

// WriteRecord writes data, a JSON value, as the record name of dir in
// the sandbox of f (as Write does), tagged with parts and data: the
// reader names the same parts.
func (k *Keeper) WriteRecord(ctx context.Context, f Files, dir, name string, data []byte, parts ...string) error {
	raw, err := json.Marshal(record{Data: data, Tag: k.Keys.Tag(append(slices.Clip(parts), string(data))...)})
	if err != nil {
		return fmt.Errorf("encoding %s: %w", name, err)
	}
	return k.Write(ctx, f, dir, name, raw)
}

// ReadRecord returns the data of the record name of dir in the sandbox
// of f, at most max bytes, once it is whole and its tag, with parts, is
// good; an error wrapping fs.ErrNotExist when it is not there.
func (k *Keeper) ReadRecord(ctx context.Context, f Files, dir, name string, max int64, parts ...string) ([]byte, error) {
	raw, err := k.Read(ctx, f, dir, name, max)
	if err != nil {
		return nil, err
	}
	var r record
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("the record %s is incomplete or not a bridge's: %w", name, err)
	}
	if !k.Keys.CheckTag(r.Tag, append(slices.Clip(parts), string(r.Data))...) {
		return nil, fmt.Errorf("the record %s does not carry the bridge's tag", name)
	}
	return r.Data, nil
}
