package load

import (
	"math/bits"
	"time"
)

// Histogram is a log-linear latency histogram: exact below 64 ns, then 32
// buckets per power of two (at most 3% relative error), up to about 18
// minutes. The zero value is ready to use; it is not safe for concurrent use.
type Histogram struct {
	counts [histBuckets]uint64
	n      uint64
	sum    uint64
	max    uint64
}

const (
	histLinear  = 64
	histSub     = 32
	histOctaves = 34
	histBuckets = histLinear + histOctaves*histSub
)

func bucketOf(v uint64) int {
	if v < histLinear {
		return int(v)
	}
	s := bits.Len64(v) - 6 // v>>s is in [32, 64)
	if s > histOctaves {
		return histBuckets - 1
	}
	return histLinear + (s-1)*histSub + int(v>>uint(s)) - histSub
}

// bucketMid returns the middle of bucket i in nanoseconds.
func bucketMid(i int) uint64 {
	if i < histLinear {
		return uint64(i)
	}
	s := uint((i-histLinear)/histSub + 1)
	m := uint64((i-histLinear)%histSub + histSub)
	lo := m << s
	return lo + (uint64(1)<<s)/2
}

// Record adds one observation.
func (h *Histogram) Record(d time.Duration) {
	v := uint64(max(d, 0))
	h.counts[bucketOf(v)]++
	h.n++
	h.sum += v
	h.max = max(h.max, v)
}

// Merge adds o's observations to h.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
	h.max = max(h.max, o.max)
}

// Count returns the number of observations.
func (h *Histogram) Count() uint64 { return h.n }

// Mean returns the mean observation.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / h.n)
}

// Max returns the largest observation.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Quantile returns the q-quantile (0 < q ≤ 1), at bucket resolution.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n) + 0.5)
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return time.Duration(min(bucketMid(i), h.max))
		}
	}
	return time.Duration(h.max)
}
