package engine

import "strconv"

// FormatBytes returns n bytes written for people, in the largest binary
// unit (KiB, MiB, GiB) it reaches: whole when n is a multiple of the unit,
// else rounded to one decimal. Examples: "1 byte", "12 bytes", "300 KiB",
// "1.5 KiB", "64.0 MiB" (64 MiB and a byte), "2 GiB". A value that would
// round up to 1024.0 of a unit is written as 1.0 of the next.
func FormatBytes(n int64) string {
	if n == 1 {
		return "1 byte"
	}
	units := [...]struct {
		shift uint
		name  string
	}{{30, "GiB"}, {20, "MiB"}, {10, "KiB"}}
	for _, u := range units {
		unit := int64(1) << u.shift
		if n < unit-unit>>11 { // below what rounds to 1.0 of the unit
			continue
		}
		if n%unit == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + " " + u.name
		}
		return strconv.FormatFloat(float64(n)/float64(unit), 'f', 1, 64) + " " + u.name
	}
	return strconv.FormatInt(n, 10) + " bytes"
}
